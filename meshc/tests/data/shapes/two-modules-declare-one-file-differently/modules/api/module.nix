{ mesh, ... }: {
  description = "an API";
  shapes = [
    (mesh.file { path = "/etc/motd"; content = "api\n"; })
  ];
}
