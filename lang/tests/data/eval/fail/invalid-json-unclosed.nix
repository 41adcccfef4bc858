# expect: E041
builtins.fromJSON "{"
