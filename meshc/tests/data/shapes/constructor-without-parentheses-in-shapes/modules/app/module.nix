{ mesh, ... }: {
  description = "an app";
  shapes = [
    mesh.user { name = "alice"; }
    (mesh.directory { path = "/srv/app"; owner = "alice"; })
  ];
}
