# expect: E042
builtins.genList (x: x) (-1)
