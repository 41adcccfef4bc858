let v = { a = 1; }; in builtins.mapAttrs (n: x: x) { p = v; q = v; }
