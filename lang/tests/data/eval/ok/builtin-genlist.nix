builtins.genList (i: i * i) 6
