# expect: E041
builtins.fromTOML "a = 1\na = 2"
