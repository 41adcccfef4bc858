{ mesh, ... }: {
  description = "a reverse proxy";
  settings.ports = mesh.option {
    type = mesh.types.listOf mesh.types.port;
    default = [ 80 ];
    description = "ports to listen on";
  };
}
