let f = x: x * 2; in [ (f 1) f 1 ]
