let x = { a = [ 1 2 3 ]; }; in [ x x x.a ]
