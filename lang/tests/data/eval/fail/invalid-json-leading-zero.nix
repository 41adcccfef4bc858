# expect: E041
builtins.fromJSON "01"
