{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.user { name = "alice"; })
    (mesh.directory { path = "/var/lib"; owner = "alice"; })
  ];
}
