let x = { a = 1; }; in { p = x; q = x; }
