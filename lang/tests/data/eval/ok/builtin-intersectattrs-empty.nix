builtins.intersectAttrs { x = 1; } { y = 2; }
