{ mesh, ... }: {
  description = "an API";
  shapes = [
    (mesh.file { path = "/etc/api.conf"; })
  ];
}
