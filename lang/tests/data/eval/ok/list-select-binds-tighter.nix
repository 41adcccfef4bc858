let s = { a = 1; }; in [ s.a s . a ]
