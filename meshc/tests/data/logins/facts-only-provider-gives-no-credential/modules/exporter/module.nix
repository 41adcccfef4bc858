{ mesh, ... }:
{
  description = "publishes its port to whoever asks, hands out no logins";
  settings.port = mesh.option { type = mesh.types.port; default = 9100; description = "port"; };
  provides.metrics = { facts = { settings, ... }: { port = settings.port; }; };
}
