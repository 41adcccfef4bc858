{ mesh, ... }: {
  description = "a website";
  settings.port = 8080;
}
