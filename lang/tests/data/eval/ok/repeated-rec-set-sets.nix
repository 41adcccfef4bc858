rec { a = { v = 1; }; b = a; c = b; }
