{ mesh, ... }: {
  description = "a website";
  settings.database = mesh.option { type = mesh.types.node; description = "the node of the database"; };
}
