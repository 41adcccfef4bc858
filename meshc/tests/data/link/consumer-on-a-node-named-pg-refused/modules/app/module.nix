{
  description = "an app";
  consumes.db = { service = "postgres"; path = "/etc/app-db"; };
}
