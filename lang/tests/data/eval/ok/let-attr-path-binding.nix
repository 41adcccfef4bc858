let a.b = 1; a.c = 2; in a
