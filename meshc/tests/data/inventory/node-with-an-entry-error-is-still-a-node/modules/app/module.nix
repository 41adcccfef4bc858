{ mesh, ... }:
{
  description = "an app with a database login";
  settings.database = mesh.option { type = mesh.types.node; description = "provider node"; };
  consumes = { settings, ... }: { db = { service = "kv"; from = settings.database; path = "/etc/app-db"; }; };
}
