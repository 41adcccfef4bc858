{ mesh, ... }: {
  description = "a website";
  shapes = [
    (mesh.service { name = "web"; exec = [ "/usr/bin/python3" "-m" "http.server" ]; user = "www"; })
  ];
}
