# expect: E040
builtins.match "(a)\\1" "aa"
