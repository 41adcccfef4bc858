let s = { a = [ 1 2 3 ]; }; in [ s.a [ s.a ] ]
