{ mesh, ... }: {
  description = "an app";
}
