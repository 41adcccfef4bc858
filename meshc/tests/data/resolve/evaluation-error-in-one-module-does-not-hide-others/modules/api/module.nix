{ mesh, ... }: {
  description = "an API";
  settings.port = mesh.option { type = mesh.types.port; default = 80; };
}
