{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.file { path = "/etc/web.conf"; content = "x"; mode = 644; })
  ];
}
