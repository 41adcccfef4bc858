let s = { a = 1; }; l = [ s ]; in [ (builtins.head l) s ]
