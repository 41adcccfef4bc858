{ mesh, ... }: {
  description = "probes HTTP targets";
  collects.interval = mesh.types.int;
}
