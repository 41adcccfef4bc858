let x = [ 1 2 3 ]; y = x ++ [ ]; in [ x y ]
