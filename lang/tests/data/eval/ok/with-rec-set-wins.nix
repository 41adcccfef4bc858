with { a = 1; }; rec { a = 2; b = a; }
