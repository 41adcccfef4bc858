# hand-written: Nix 2.8 silently cuts a string at a NUL byte (`\u0000` in JSON gives ""); mesh never truncates a string and keeps all of it
let s = builtins.fromJSON "\"a\\u0000bc\""; in [ (builtins.stringLength s) (builtins.substring 2 2 s) ]
