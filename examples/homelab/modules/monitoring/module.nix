# monitoring: probes the HTTP targets other modules on the node register.
{ mesh, ... }:
{
  description = "Probes the HTTP endpoints that modules on the same node register";
  requires = [ "networking" ];

  settings.interval = mesh.option { type = mesh.types.int; default = 30; description = "Seconds between probes"; };

  collects.targets = mesh.types.attrsOf mesh.types.str;

  contributes = { ... }: { networking.ports = [ 9100 ]; };

  shapes = { settings, collected, ... }: [
    (mesh.directory { path = "/etc/mesh/monitoring"; })
    (mesh.file {
      path = "/etc/mesh/monitoring/targets.json";
      content = builtins.toJSON { inherit (settings) interval; targets = collected.targets; };
    })
    (mesh.service {
      name = "monitoring";
      exec = [ "/usr/local/bin/probe" "--config" "/etc/mesh/monitoring/targets.json" ];
      after = [ "network-online.target" ];
    })
  ];
}
