let x = { a = 1; }; y = x // { b = 2; }; in [ x y ]
