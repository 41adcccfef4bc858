with { a = 1; }; let a = 2; in a
