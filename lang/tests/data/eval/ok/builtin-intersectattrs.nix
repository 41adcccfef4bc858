builtins.intersectAttrs { a = 0; b = 0; } { a = 1; b = 2; c = 3; }
