with { x = 1; }; with { y = 2; }; x + y
