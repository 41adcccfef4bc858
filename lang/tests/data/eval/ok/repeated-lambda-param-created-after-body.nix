let k = (p: let r = [ 1 2 ]; p = r; in [ p r ]) 0; in k
