let x = 1; f = y: y; in [ (f 2) (builtins.typeOf a:b) ]
