let f = y: y; x = [ 1 2 ]; in [ (f x) x ]
