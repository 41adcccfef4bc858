# expect: E041
builtins.fromTOML "a = "
