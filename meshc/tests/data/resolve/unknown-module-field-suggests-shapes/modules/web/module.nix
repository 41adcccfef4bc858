{ mesh, ... }: {
  description = "a website";
  shape = [ (mesh.directory { path = "/srv/web"; }) ];
}
