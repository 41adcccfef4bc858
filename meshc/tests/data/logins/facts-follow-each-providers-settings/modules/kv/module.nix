{ mesh, ... }:
{
  description = "a key-value store whose facts are a function of its node and settings";
  settings.port = mesh.option {
    type = mesh.types.port;
    default = 6379;
    description = "TCP port";
  };
  provides.kv = {
    manifest = "/etc/kv/grants.json";
    credentials = "/etc/kv/grants";
    form = "plain";
    facts = { node, settings, ... }: {
      port = settings.port;
      database = "main";
      served-by = node.name;
    };
  };
  shapes = { settings, ... }: [
    (mesh.directory { path = "/etc/kv"; })
    (mesh.directory { path = "/etc/kv/grants"; mode = "0700"; })
    (mesh.file { path = "/etc/kv/kv.conf"; content = "port ${toString settings.port}\n"; })
  ];
}
