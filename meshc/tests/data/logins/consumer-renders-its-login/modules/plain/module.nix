{ mesh, ... }:
{
  description = "a node that consumes nothing";
  shapes = [ (mesh.file { path = "/etc/motd"; content = "hello\n"; }) ];
}
