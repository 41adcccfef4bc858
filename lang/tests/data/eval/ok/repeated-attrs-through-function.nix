let f = y: y; x = { a = 1; }; in [ (f x) x ]
