# expect: E001
{ inherit (x a; }
