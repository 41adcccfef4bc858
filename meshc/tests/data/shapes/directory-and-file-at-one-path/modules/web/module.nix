{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.file { path = "/srv/site"; content = "<h1>hi</h1>\n"; })
  ];
}
