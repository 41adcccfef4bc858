let x = [ 1 2 3 ]; in [ x (map (a: a) x) ]
