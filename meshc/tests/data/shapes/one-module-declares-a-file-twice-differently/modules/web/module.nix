{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.file { path = "/etc/motd"; content = "welcome\n"; })
    (mesh.file { path = "/etc/motd"; content = "welcome!\n"; mode = "0600"; })
  ];
}
