let s = { a = 1; b = 2; }; in let inherit (s) a b; in a + b
