{ mesh, ... }: {
  description = "an app on a port";
  settings.port = mesh.option { default = 8080; description = "the port"; };
}
