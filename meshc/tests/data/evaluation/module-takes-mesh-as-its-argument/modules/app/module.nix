mesh: {
  description = "an app";
  settings.port = mesh.option { type = mesh.types.port; default = 8080; };
  shapes = [
    (mesh.service { name = "app"; exec = [ "/usr/bin/app" ]; })
  ];
}
