# monitoring: Prometheus (the base system's `prometheus`, Debian's package) scraping
# the `node-exporter` of each node named in `nodes`. The targets are not written
# here: each is a consumption of the node's `node-exporter` service (a provider of
# facts only), so its address comes from mesh.nix and its port from that node's
# settings, and a node that does not run node-exporter is a compile error (E302).
# Modules on this node may add scrape jobs:
#   contributes.monitoring.jobs.shop = [ "127.0.0.1:8000" ];
{ mesh, ... }:
let
  inherit (mesh) types;
  target = types.strMatching "([a-zA-Z0-9]([a-zA-Z0-9.-]{0,251}[a-zA-Z0-9])?|\\[[0-9a-fA-F:.]+]):[0-9]{1,5}";
  duration = types.strMatching "([0-9]+(ms|s|m|h|d|w|y))+";
  # consume names are identifiers; node names may hold `.` and `@`
  consumeName = node: "node-" + builtins.replaceStrings [ "." "@" ] [ "_" "_" ] node;
  hostOf = login:
    let address = if login.address == null then login.provider else login.address;
    in if builtins.match ".*:.*" address != null then "[${address}]" else address;
in
{
  description = "Prometheus scraping the node-exporter of the nodes it is given, plus jobs modules on its node add";
  requires = [ "networking" ];

  settings = {
    nodes = mesh.option {
      type = types.listOf types.node;
      default = [ ];
      description = "Nodes whose node-exporter is scraped (each must run the node-exporter module)";
    };
    port = mesh.option {
      type = types.port;
      default = 9090;
      description = "TCP port of Prometheus' web interface and API (opened in the firewall)";
    };
    scrapeInterval = mesh.option {
      type = duration;
      default = "30s";
      description = "How often targets are scraped (a Prometheus duration: 15s, 1m)";
    };
    retention = mesh.option {
      type = duration;
      default = "15d";
      description = "How long samples are kept (a Prometheus duration)";
    };
  };

  collects.jobs = types.attrsOf (types.listOf target);

  contributes = { settings, ... }: { networking.ports = [ settings.port ]; };

  consumes = { settings, ... }: builtins.listToAttrs (map (node: {
    name = consumeName node;
    value = { service = "node-exporter"; from = node; };
  }) settings.nodes);

  shapes = { settings, collected, logins, ... }:
    let
      badJob = builtins.filter (job: builtins.match "[a-zA-Z_][a-zA-Z0-9_-]*" job == null || job == "node")
        (builtins.attrNames collected.jobs);
      nodeTargets = map (node:
        let login = logins.${consumeName node};
        in { targets = [ "${hostOf login}:${toString login.facts.port}" ]; labels.node = node; }
      ) settings.nodes;
      scrapeConfigs =
        if badJob != [ ] then
          throw "monitoring job `${builtins.head badJob}` is not a job name (letters, digits, `_` and `-`; `node` is this module's own)"
        else
          (if nodeTargets == [ ] then [ ] else [ { job_name = "node"; static_configs = nodeTargets; } ])
          ++ builtins.attrValues (builtins.mapAttrs (job: targets: {
            job_name = job;
            static_configs = [ { inherit targets; } ];
          }) collected.jobs);
      # JSON is YAML: no value can change the file's structure
      config = {
        global = { scrape_interval = settings.scrapeInterval; evaluation_interval = settings.scrapeInterval; };
        scrape_configs = scrapeConfigs;
      };
      configFile = "/etc/mesh/monitoring/prometheus.yml";
    in
    [
      (mesh.directory { path = "/etc/mesh"; })
      (mesh.directory { path = "/etc/mesh/monitoring"; })
      (mesh.file { path = configFile; content = builtins.toJSON config + "\n"; })
      (mesh.user { name = "monitoring"; home = "/var/lib/mesh/monitoring"; })
      (mesh.directory { path = "/var/lib/mesh"; })
      (mesh.directory { path = "/var/lib/mesh/monitoring"; owner = "monitoring"; group = "monitoring"; mode = "0750"; })
      # the name of Debian's unit: the mesh's unit in /etc/systemd/system takes its place
      (mesh.service {
        name = "prometheus";
        user = "monitoring";
        # naming the file restarts Prometheus when its configuration changes
        exec = [
          "/usr/bin/prometheus"
          "--config.file" configFile
          "--storage.tsdb.path" "/var/lib/mesh/monitoring"
          "--storage.tsdb.retention.time" settings.retention
          "--web.listen-address" ":${toString settings.port}"
        ];
        after = [ "network-online.target" ];
      })
    ];
}
