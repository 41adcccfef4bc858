# expect: E008
{ ${"a"} = 1; a = 2; }
