{ mesh, ... }: {
  description = "a website";
  settings = [ "port" ];
}
