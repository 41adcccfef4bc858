let s = { "a b" = 1; }; in { inherit (s) "a b"; }
