let a = b + 1; b = 10; in a
