{ mesh, ... }: {
  description = "a website";
  shapes = { ... }: { motd = mesh.file { path = "/etc/motd"; content = "hi\n"; }; };
}
