{ mesh, ... }: {
  description = "a website";
  settings.port = mesh.option { type = "port"; default = 8080; description = "TCP port"; };
}
