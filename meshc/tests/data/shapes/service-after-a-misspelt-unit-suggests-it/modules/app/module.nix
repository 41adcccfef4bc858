{ mesh, ... }: {
  description = "an app and its database";
  shapes = [
    (mesh.user { name = "app"; })
    (mesh.service { name = "appdb"; user = "app"; exec = [ "/usr/bin/appdb" ]; })
    (mesh.service {
      name = "app";
      user = "app";
      exec = [ "/usr/bin/app" ];
      after = [ "network-online.target" "app-db" ];
    })
  ];
}
