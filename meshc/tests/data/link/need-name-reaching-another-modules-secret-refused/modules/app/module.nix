{
  description = "an app";
  needs."../postgres/superuser" = { path = "/etc/app/db-password"; };
}
