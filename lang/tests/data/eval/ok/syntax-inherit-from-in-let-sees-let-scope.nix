let inherit (s) a; s = { a = 1; }; in a
