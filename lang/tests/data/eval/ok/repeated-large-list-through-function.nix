let f = y: y; x = [ 1 2 3 ]; in [ (f x) x ]
