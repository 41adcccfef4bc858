let nats = n: [ n ] ++ nats (n + 1); in builtins.head (builtins.genList (x: x) 3)
