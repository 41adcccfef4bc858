# expect: E041
builtins.fromJSON "\"\\ud800\""
