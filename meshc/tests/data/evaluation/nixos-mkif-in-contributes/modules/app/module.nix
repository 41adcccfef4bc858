{ mesh, ... }: {
  description = "an app that opens its port on a condition";
  settings.open = mesh.option { type = mesh.types.bool; default = true; description = "open the port"; };
  contributes = { settings, ... }: {
    networking = mesh.lib.mkIf settings.open { ports = [ 8080 ]; };
  };
}
