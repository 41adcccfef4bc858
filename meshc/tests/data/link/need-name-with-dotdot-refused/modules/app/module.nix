{
  description = "an app";
  needs."../../x" = { path = "/etc/app/x"; };
}
