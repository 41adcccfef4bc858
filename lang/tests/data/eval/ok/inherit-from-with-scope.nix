with { v = 5; }; { inherit v; }
