{
  description = "a database";
  provides.postgres = { manifest = "/etc/postgres-grants.json"; credentials = "/etc"; form = "scram-sha-256"; };
}
