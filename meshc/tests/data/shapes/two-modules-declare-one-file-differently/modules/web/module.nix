{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.file { path = "/etc/motd"; content = "web\n"; })
  ];
}
