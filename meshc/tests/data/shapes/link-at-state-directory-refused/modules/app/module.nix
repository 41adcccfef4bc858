{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.link { path = "/var/lib/mesh"; target = "/srv/state"; })
  ];
}
