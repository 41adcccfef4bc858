rec { a.b = 1; c = a.b + 1; }
