{ mesh, ... }: {
  description = "probes HTTP targets";
  collects = [ "targets" ];
}
