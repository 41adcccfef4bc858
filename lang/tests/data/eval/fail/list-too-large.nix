# expect: E045
builtins.length (builtins.genList (x: x) 5000000000)
