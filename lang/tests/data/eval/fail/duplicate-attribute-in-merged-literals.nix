# expect: E008
{ a = { b = 1; }; a = { b = 2; }; }
