{ mesh, ... }: {
  description = "a web server";
  settings.port = mesh.option {
    type = mesh.types.nullOr mesh.types.port;
    default = null;
    description = "the port, or null to listen on none";
  };
}
