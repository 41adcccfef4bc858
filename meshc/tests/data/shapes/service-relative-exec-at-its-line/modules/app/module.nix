{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.user { name = "app"; })
    (mesh.service {
      name = "app";
      user = "app";
      exec = [ "nginx" "-g" "daemon off;" ];
    })
  ];
}
