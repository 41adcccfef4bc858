let s = { a = 1; }; in [ (s ? a == true) (!s ? a) (s ? "a") ]
