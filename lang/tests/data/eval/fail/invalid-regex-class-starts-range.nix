# expect: E040
builtins.match "[[:alpha:]-z]" "a"
