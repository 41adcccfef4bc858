{ mesh, ... }: {
  description = "an app";
  shapes = [ (mesh.user { name = "1000"; }) ];
}
