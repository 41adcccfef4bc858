let x = 1; in with { x = 2; }; with { y = 3; }; [ x y ]
