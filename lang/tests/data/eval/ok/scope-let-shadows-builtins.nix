let builtins = { x = 1; }; in builtins.x
