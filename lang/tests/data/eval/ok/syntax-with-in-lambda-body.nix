let f = s: with s; a + b; in f { a = 1; b = 2; }
