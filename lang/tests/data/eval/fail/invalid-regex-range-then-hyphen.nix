# expect: E040
builtins.match "[a-c-e]" "d"
