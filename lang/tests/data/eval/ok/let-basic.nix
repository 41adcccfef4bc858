let a = 1; b = 2; in a + b
