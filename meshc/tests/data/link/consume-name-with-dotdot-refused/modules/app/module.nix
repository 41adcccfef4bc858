{
  description = "an app";
  consumes."../../db" = { service = "kv"; path = "/etc/app-db"; };
}
