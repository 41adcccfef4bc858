# expect: E041
builtins.fromJSON "9223372036854775808"
