{
  description = "an app";
  needs.key = { path = "/etc/app-key"; mode = "0777"; };
}
