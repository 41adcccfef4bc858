{ mesh, ... }: {
  description = "puts a file where the app's file is";
  shapes = [
    (mesh.file {
      path = "/etc/app/conf/extra";
      content = "more\n";
    })
  ];
}
