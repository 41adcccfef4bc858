{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.directory { path = "/srv/web/static"; })
  ];
}
