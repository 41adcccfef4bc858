# expect: E036
builtins.currentSystem
