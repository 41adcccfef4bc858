{ mesh, ... }: {
  description = "an app that refuses high ports";
  settings.port = mesh.option { type = mesh.types.port; default = 8080; description = "the port"; };
  shapes = { settings, ... }: [
    (mesh.file { path = "/srv/app-port"; content = throw "port ${toString settings.port} is too high"; })
  ];
}
