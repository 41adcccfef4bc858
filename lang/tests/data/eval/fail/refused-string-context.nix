# expect: E036
builtins.getContext "x"
