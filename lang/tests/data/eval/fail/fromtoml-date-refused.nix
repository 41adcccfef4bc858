# expect: E041
builtins.fromTOML "d = 1979-05-27"
