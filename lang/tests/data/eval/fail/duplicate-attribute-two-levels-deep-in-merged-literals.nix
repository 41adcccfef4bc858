# expect: E008
{ a = { b = { c = 1; }; }; a = { b = { d = 2; }; }; }
