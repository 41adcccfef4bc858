let x = 1; in { a = { inherit x; }; a.y = 2; }
