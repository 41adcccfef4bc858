# expect: E041
{ f = x: x; }
