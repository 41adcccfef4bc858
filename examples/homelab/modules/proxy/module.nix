# proxy: the gateway's HTTP entry point, balancing over the application nodes.
{ mesh, ... }:
{
  description = "HTTP reverse proxy in front of the application nodes";
  requires = [ "networking" ];

  settings.upstreams = mesh.option {
    type = mesh.types.listOf mesh.types.str;
    default = [ ];
    description = "Addresses (host:port) of the servers to balance over";
  };

  contributes = { ... }: { networking.ports = [ 80 ]; };

  shapes = { settings, ... }: [
    (mesh.directory { path = "/etc/mesh/proxy"; })
    (mesh.file {
      path = "/etc/mesh/proxy/haproxy.cfg";
      content = ''
        frontend http
          bind :80
          default_backend apps
        backend apps
          balance roundrobin
        ${builtins.concatStringsSep "\n" (builtins.genList (i: "  server app${toString i} ${builtins.elemAt settings.upstreams i} check") (builtins.length settings.upstreams))}
      '';
    })
    (mesh.service {
      name = "proxy";
      exec = [ "/usr/sbin/haproxy" "-f" "/etc/mesh/proxy/haproxy.cfg" ];
      after = [ "network-online.target" ];
    })
  ];
}
