let p = [ 1 2 ]; in let q = p; in [ p q ]
