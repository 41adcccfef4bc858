(builtins.mapAttrs (n: v: throw "lazy") { a = 1; b = 2; }) ? a
