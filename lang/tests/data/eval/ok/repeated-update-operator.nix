let x = { a = 1; }; y = x // { }; in [ x y ]
