{ mesh, ... }: {
  description = "a website";
  shape = [ ];
}
