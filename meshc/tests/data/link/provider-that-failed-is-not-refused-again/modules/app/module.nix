{ mesh, ... }:
{
  description = "an app with a database login";
  settings.database = mesh.option { type = mesh.types.nullOr mesh.types.str; default = null; description = "provider node"; };
  consumes = { settings, ... }: { db = { service = "kv"; from = settings.database; path = "/etc/app-db"; }; };
  shapes = { logins, ... }: [
    (mesh.file { path = "/etc/app.conf"; content = "kv at ${logins.db.provider}"; })
  ];
}
