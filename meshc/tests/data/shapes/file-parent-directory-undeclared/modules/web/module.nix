{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.file { path = "/etc/web/web.conf"; content = "listen 80\n"; })
  ];
}
