# expect: E008
{ a = 1; a.b.c = 2; }
