{ mesh, ... }: {
  description = "an app";
  options.port = mesh.option { type = mesh.types.port; default = 8080; description = "the port"; };
}
