# node-exporter: the node's metrics for Prometheus, from the base system's
# `prometheus-node-exporter` (Debian's package). Its port is opened through
# `networking` and published as a fact of the `node-exporter` service, a provider of
# facts only: `monitoring` on another node consumes it to learn where to scrape.
{ mesh, ... }:
{
  description = "Host metrics for Prometheus (the base system's prometheus-node-exporter), published to monitoring";
  requires = [ "networking" ];

  settings = {
    port = mesh.option {
      type = mesh.types.port;
      default = 9100;
      description = "TCP port the exporter listens on (opened in the firewall)";
    };
    collectors = mesh.option {
      type = mesh.types.listOf (mesh.types.enum [ "systemd" "processes" "tcpstat" "interrupts" "ntp" "mountstats" ]);
      default = [ "systemd" ];
      description = "Collectors to enable besides the exporter's defaults";
    };
  };

  contributes = { settings, ... }: { networking.ports = [ settings.port ]; };

  # no logins: whoever the firewall lets in may scrape; consumers learn the port
  provides.node-exporter.facts = { settings, ... }: { port = settings.port; };

  shapes = { settings, ... }: [
    (mesh.user { name = "node-exporter"; home = "/var/lib/mesh/node-exporter"; })
    (mesh.directory { path = "/var/lib/mesh"; })
    (mesh.directory { path = "/var/lib/mesh/node-exporter"; owner = "node-exporter"; group = "node-exporter"; mode = "0750"; })
    # the name of Debian's unit: the mesh's unit in /etc/systemd/system takes its place
    (mesh.service {
      name = "prometheus-node-exporter";
      user = "node-exporter";
      exec = [ "/usr/bin/prometheus-node-exporter" "--web.listen-address=:${toString settings.port}" ]
        ++ map (collector: "--collector.${collector}") settings.collectors;
      after = [ "network-online.target" ];
    })
  ];
}
