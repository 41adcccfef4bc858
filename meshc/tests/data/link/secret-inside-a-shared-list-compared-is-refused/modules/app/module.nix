{ mesh, ... }:
{
  description = "an app with a token";
  needs.token = { path = "/etc/app-token"; };
  shapes = { secrets, ... }: [
    (mesh.file { path = "/etc/app.conf"; content = let s = secrets.token; in let l = [ [ s ] ]; in if builtins.seq (builtins.head (builtins.head l)) ([ l ] == [ l ]) then "a" else "b"; })
  ];
}
