{ mesh, ... }: {
  description = "the base every node runs";
}
