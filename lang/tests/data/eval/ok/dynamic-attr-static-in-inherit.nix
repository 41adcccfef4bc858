let a = 1; s = { b = 2; }; in { inherit ${"a"}; inherit (s) ${"b"}; }
