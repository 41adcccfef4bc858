let x = { a = 1; }; in { inherit x; y = x; }
