# expect: E041
builtins.fromJSON "[1,]"
