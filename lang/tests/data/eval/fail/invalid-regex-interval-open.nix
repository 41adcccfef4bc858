# expect: E040
builtins.match "a{,2}" "aa"
