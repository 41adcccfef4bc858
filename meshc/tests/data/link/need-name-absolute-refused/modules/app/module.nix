{
  description = "an app";
  needs."/abs" = { path = "/etc/app/x"; };
}
