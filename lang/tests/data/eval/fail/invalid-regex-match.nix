# expect: E040
builtins.match "(" "x"
