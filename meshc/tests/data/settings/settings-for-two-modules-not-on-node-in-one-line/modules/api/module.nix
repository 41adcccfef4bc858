{ mesh, ... }: {
  description = "an api";
  settings = {
    port = mesh.option { type = mesh.types.port; default = 8080; description = "TCP port"; };
    title = mesh.option { type = mesh.types.str; default = "mesh"; description = "page title"; };
  };
}
