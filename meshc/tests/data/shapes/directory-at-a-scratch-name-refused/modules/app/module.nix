{ mesh, ... }: {
  description = "an app";
  shapes = [ (mesh.directory { path = "/srv/.www.mesh-unpack"; }) ];
}
