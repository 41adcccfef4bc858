builtins.catAttrs "a" [ { a = 1; } { b = 0; } { a = 2; } ]
