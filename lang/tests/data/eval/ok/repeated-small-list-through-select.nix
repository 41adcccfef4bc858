let s = { x = [ 1 2 ]; }; in [ s.x s.x ]
