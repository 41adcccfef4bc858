# expect: E020
builtins.length 1
