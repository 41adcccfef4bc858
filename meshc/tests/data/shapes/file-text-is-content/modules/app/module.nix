{ mesh, ... }: {
  description = "an app with a configuration file";
  shapes = [
    (mesh.file { path = "/etc/app.conf"; text = "port = 8080\n"; })
  ];
}
