# expect: E040
builtins.split "^*" "a"
