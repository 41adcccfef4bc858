{ mesh, ... }: {
  description = "a website, its user renamed in one place only";
  shapes = [
    (mesh.user { name = "www-data"; })
    (mesh.directory { path = "/srv/www"; owner = "www_data"; })
    (mesh.file { path = "/srv/www/index.html"; content = "hello\n"; owner = "www_data"; })
    (mesh.service { name = "web"; exec = [ "/usr/bin/python3" "-m" "http.server" ]; user = "www_data"; })
  ];
}
