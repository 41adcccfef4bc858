let s = { a = 1; b = throw "lazy"; }; in { inherit (s) a b; }.a
