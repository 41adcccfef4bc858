let s = { a = { b = 1; }; }; in [ (s ? a) (s ? b) (s ? a.b) (s ? a.c) (s ? a.b.c) ]
