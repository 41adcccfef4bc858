{ mesh, ... }:
{
  description = "a key-value store";
  settings.port = mesh.option { type = mesh.types.port; default = mesh.lib.mkDefault 6379; description = "port"; };
  provides.kv = { manifest = "/etc/kv-grants.json"; credentials = "/etc"; form = "plain"; };
}
