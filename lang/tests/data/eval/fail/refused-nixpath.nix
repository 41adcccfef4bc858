# expect: E036
builtins.nixPath
