# expect: E041
builtins.fromTOML "a = 9223372036854775808"
