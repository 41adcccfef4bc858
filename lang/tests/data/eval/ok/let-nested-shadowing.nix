let x = 1; in let x = 2; y = x; in [ x y ]
