{ mesh, ... }: {
  description = "probes HTTP targets";
  collects.targets = mesh.types.attrsOf mesh.types.str;
}
