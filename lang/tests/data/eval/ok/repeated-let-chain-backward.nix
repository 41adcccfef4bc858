let a = b; b = c; c = [ 1 2 ]; in [ a b c ]
