{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.service { name = "web"; exec = [ "/usr/bin/web" ]; })
    (mesh.file { path = "/etc/systemd/system/web.service"; content = "[Service]\nExecStart=/bin/sh\n"; })
  ];
}
