{ a = rec { b = 1; c = b + 1; }; a.d = 3; }
