{ mesh, ... }: {
  description = "a website";
  shapes = { setings, ... }: [ ];
}
