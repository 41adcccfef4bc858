with { a = 1; }; rec { b = a; c = b + 1; }
