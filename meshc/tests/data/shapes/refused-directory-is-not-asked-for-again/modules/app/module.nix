{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.directory { path = "/srv/app"; owner = "1000"; })
    (mesh.file { path = "/srv/app/port"; content = "8080"; })
  ];
}
