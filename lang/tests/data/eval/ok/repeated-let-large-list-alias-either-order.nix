let a = b; b = [ 1 2 3 ]; in [ a b ]
