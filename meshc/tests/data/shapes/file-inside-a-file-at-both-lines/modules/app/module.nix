{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.directory { path = "/etc/app"; })
    (mesh.file {
      path = "/etc/app/conf";
      content = "port = 80\n";
    })
  ];
}
