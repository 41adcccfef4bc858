let s = { x = [ 1 2 3 ]; }; in [ s.x s.x ]
