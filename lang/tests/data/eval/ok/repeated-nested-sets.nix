let inner = { v = 1; }; outer = { a = inner; b = inner; }; in [ outer outer ]
