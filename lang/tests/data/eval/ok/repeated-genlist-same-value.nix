let s = { a = 1; }; in builtins.genList (i: s) 3
