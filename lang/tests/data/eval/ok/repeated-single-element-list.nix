let x = [ 1 ]; in [ x x ]
