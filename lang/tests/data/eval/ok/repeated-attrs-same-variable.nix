let x = { a = 1; }; in [ x x ]
