{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.file { path = "/etc/app.conf"; content = builtins.readFile ./templates; })
  ];
}
