# expect: E036
builtins.placeholder "out"
