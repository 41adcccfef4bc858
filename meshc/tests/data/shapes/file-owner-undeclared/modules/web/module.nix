{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.file { path = "/srv/index.html"; content = "hello\n"; owner = "www"; })
  ];
}
