{ mesh, ... }:
{
  description = "a client that writes down everything its login says";
  settings.store = mesh.option {
    type = mesh.types.node;
    description = "the node whose store it uses";
  };
  consumes = { settings, ... }: {
    store = { service = "kv"; from = settings.store; path = "/etc/client/store-password"; };
  };
  shapes = { logins, ... }: [
    (mesh.directory { path = "/etc/client"; })
    (mesh.file { path = "/etc/client/login.json"; content = builtins.toJSON logins; })
  ];
}
