{ mesh, ... }: {
  description = "an app that brings its own accounts";
  shapes = [
    (mesh.file { path = "/etc/passwd"; content = "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/srv/app:/bin/sh\n"; })
  ];
}
