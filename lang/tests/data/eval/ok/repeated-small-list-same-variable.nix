let x = [ 1 2 ]; in [ x x ]
