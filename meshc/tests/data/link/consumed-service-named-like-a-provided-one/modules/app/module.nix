{ mesh, ... }:
{
  description = "an app with a database login";
  settings.database = mesh.option { type = mesh.types.nullOr mesh.types.str; default = null; description = "provider node"; };
  consumes = { settings, ... }: { db = { service = "kvstore"; from = settings.database; path = "/etc/app-db"; }; };
}
