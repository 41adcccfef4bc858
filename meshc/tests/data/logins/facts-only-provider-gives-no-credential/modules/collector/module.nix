{ mesh, ... }:
{
  description = "gathers the address and port of each node it is told to watch";
  settings.targets = mesh.option { type = mesh.types.listOf mesh.types.node; default = [ ]; description = "nodes"; };
  consumes = { settings, ... }: builtins.listToAttrs (map (node: {
    name = "metrics-${node}";
    value = { service = "metrics"; from = node; };
  }) settings.targets);
  shapes = { logins, ... }: [
    (mesh.file {
      path = "/etc/targets";
      content = builtins.concatStringsSep "\n" (map (login:
        "${login.provider} ${if login.address == null then login.provider else login.address}:${toString login.facts.port} path=${builtins.toJSON login.path}"
      ) (builtins.attrValues logins)) + "\n";
    })
  ];
}
