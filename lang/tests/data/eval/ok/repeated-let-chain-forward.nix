let c = [ 1 2 ]; b = c; a = b; in [ a b c ]
