{ mesh, ... }: {
  description = "an app with a directory";
  shapes = [
    (mesh.directory { path = "/srv/app/"; })
  ];
}
