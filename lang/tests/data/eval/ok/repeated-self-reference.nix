let s = { a = 1; self = s; }; in s
