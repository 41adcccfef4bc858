{ mesh, ... }: {
  description = "a web server";
  settings.banner = mesh.option {
    type = mesh.types.lines;
    default = "";
    description = "what the server says first";
  };
}
