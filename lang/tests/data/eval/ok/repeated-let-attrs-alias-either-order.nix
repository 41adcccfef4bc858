let a = b; b = { v = 1; }; in [ a b ]
