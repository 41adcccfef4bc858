# networking: the node's name and its firewall. Other modules open ports by
# contributing to `networking.ports`; this module turns them into nftables rules.
{ mesh, ... }:
let
  unique = list: builtins.foldl' (seen: item: if builtins.elem item seen then seen else seen ++ [ item ]) [ ] list;
  rule = port: "    tcp dport ${toString port} accept";
in
{
  description = "The node's hostname and a firewall that opens the ports other modules contribute";

  settings = {
    firewall = mesh.option {
      type = mesh.types.bool;
      default = true;
      description = "Whether to install the firewall rules (nftables) that allow only the collected ports and SSH";
    };
    extraPorts = mesh.option {
      type = mesh.types.listOf mesh.types.port;
      default = [ ];
      description = "TCP ports to open in addition to the ones modules contribute";
    };
  };

  collects.ports = mesh.types.listOf mesh.types.port;

  shapes = { node, settings, collected, ... }:
    let
      ports = builtins.sort builtins.lessThan (unique ([ 22 ] ++ collected.ports ++ settings.extraPorts));
      rules = ''
        table inet mesh {
          chain input {
            type filter hook input priority 0; policy drop;
            ct state established,related accept
            iifname "lo" accept
            ip protocol icmp accept
            ip6 nexthdr icmpv6 accept
        ${builtins.concatStringsSep "\n" (map rule ports)}
          }
        }
      '';
    in
    [
      (mesh.file { path = "/etc/hostname"; content = "${node.name}\n"; })
      (mesh.directory { path = "/etc/mesh"; })
    ]
    ++ (if settings.firewall then [
      (mesh.file { path = "/etc/mesh/firewall.nft"; content = rules; mode = "0600"; })
      (mesh.service {
        name = "mesh-firewall";
        exec = [ "/usr/sbin/nft" "-f" "/etc/mesh/firewall.nft" ];
        restart = "no";
        after = [ "network-pre.target" ];
      })
    ] else [ ]);
}
