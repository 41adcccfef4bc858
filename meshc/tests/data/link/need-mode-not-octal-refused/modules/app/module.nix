{
  description = "an app";
  needs.token = { path = "/etc/app-token"; mode = "0800"; };
}
