{ mesh, ... }: {
  description = "an app";
  shapes = [ (mesh.file { path = "/etc/app-‮fnoc.txt"; content = "x\n"; }) ];
}
