# Functions with formals and defaults, as every module and constructor is called:
# 60,000 calls of a constructor with five formals, three of them defaulted, some
# passed and some not, with `...` and `@args`.
let
  service = { name, user ? name, port ? 8080, restart ? "always", after ? [ ], ... }@args: {
    inherit name user port restart;
    after = after ++ [ "network.target" ];
    extras = builtins.length (builtins.attrNames args);
  };
  make = i:
    if i - (i / 3) * 3 == 0 then service { name = "s${toString i}"; }
    else if i - (i / 3) * 3 == 1 then service { name = "s${toString i}"; port = i; user = "web"; }
    else service { name = "s${toString i}"; restart = "no"; after = [ "db" ]; description = "x"; };
  all = builtins.genList make 60000;
in
builtins.foldl' (acc: s: builtins.deepSeq acc {
  ports = acc.ports + s.port;
  extras = acc.extras + s.extras;
  after = acc.after + builtins.length s.after;
  users = acc.users + builtins.stringLength s.user + builtins.stringLength s.restart;
}) { ports = 0; extras = 0; after = 0; users = 0; } all
