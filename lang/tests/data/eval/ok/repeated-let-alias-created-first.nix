let b = [ 1 2 ]; a = b; in [ a b ]
