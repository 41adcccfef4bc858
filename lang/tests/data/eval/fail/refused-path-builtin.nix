# expect: E036
builtins.path { path = ./lib; }
