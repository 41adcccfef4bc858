let s = { a = 1; b = 2; c = 3; }; in { inherit (s) a c; }
