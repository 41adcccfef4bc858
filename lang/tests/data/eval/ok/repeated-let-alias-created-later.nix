let a = c; b = [ 1 2 ]; c = b; in [ a b c ]
