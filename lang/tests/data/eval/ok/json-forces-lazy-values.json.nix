let s = { a = 1 + 1; b = builtins.genList (x: x * x) 4; }; in s
