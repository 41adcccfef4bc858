{ mesh, ... }:
{
  description = "an app with a token";
  needs.token = { path = "/etc/app-token"; };
  shapes = { secrets, ... }: [
    (mesh.file { path = "/etc/app.conf"; content = builtins.trace secrets.token "x"; })
  ];
}
