let x = [ 1 2 ]; y = x; in [ x y ]
