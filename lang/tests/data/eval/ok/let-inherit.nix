let x = 1; in let inherit x; y = 2; in [ x y ]
