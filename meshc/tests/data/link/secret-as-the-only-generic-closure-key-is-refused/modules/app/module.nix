{ mesh, ... }:
{
  description = "an app with a token";
  needs.token = { path = "/etc/app-token"; };
  shapes = { secrets, ... }: [
    (mesh.file { path = "/etc/app.conf"; content = let s = secrets.token; in toString (builtins.length (builtins.genericClosure { startSet = [ { key = s; } ]; operator = item: [ ]; })); })
  ];
}
