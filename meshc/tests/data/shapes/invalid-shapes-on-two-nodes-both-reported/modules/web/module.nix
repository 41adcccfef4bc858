{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.service { name = "web"; exec = [ ]; })
  ];
}
