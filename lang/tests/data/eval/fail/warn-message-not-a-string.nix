# expect: E020
builtins.warn 1 2
