# expect: E041
builtins.toJSON { f = x: x; }
