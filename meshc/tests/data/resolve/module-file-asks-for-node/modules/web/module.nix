{ mesh, node, ... }: {
  description = "a website for ${node.name}";
}
