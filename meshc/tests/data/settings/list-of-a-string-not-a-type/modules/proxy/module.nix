{ mesh, ... }: {
  description = "a reverse proxy";
  settings.upstreams = mesh.option {
    type = mesh.types.listOf "str";
    default = [ ];
    description = "servers to balance over";
  };
}
