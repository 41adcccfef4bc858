{ mesh, ... }:
{
  description = "a key-value store that publishes where and how to reach it";
  settings.port = mesh.option {
    type = mesh.types.port;
    default = 6379;
    description = "TCP port";
  };
  provides = { node, settings, ... }: {
    kv = {
      manifest = "/etc/kv/grants.json";
      credentials = "/etc/kv/grants";
      form = "plain";
      facts = {
        port = settings.port;
        database = "main";
        served-by = node.name;
      };
    };
  };
  shapes = { settings, ... }: [
    (mesh.directory { path = "/etc/kv"; })
    (mesh.directory { path = "/etc/kv/grants"; mode = "0700"; })
    (mesh.file { path = "/etc/kv/kv.conf"; content = "port ${toString settings.port}\n"; })
  ];
}
