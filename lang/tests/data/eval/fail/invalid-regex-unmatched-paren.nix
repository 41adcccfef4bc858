# expect: E040
builtins.match "a)" "a)"
