{ mesh, ... }: {
  description = "an app with tags";
  settings.tags = mesh.option { type = mesh.types.listOf str; default = [ ]; description = "tags"; };
}
