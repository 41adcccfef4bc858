{ mesh, ... }: {
  description = "an API";
  shapes = [
    (mesh.directory { path = "/srv/site"; })
  ];
}
