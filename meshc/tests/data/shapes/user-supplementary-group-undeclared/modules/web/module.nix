{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.user { name = "web"; groups = [ "adm" "www-data" ]; })
  ];
}
