{ mesh, ... }: {
  description = "an app";
  shapes = [ (mesh.file { path = "/var/lib/mesh/identity"; content = "AGE-SECRET-KEY-NOT-REALLY\n"; }) ];
}
