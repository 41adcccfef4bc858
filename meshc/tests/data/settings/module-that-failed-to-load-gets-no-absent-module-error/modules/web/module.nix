{ mesh, ... }: {
  description = "a website";
  settings.port = mesh.option {
    type = mesh.types.port;
    default = "8080";
    description = "TCP port";
  };
}
