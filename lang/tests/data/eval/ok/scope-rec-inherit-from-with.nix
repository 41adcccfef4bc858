with { a = 1; }; rec { inherit a; b = a + 1; }
