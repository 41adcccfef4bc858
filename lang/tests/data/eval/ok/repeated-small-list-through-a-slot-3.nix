let s = { a = [ 1 2 ]; }; b = s.a; in [ b s.a b ]
