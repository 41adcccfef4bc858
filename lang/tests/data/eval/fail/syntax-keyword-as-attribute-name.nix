# expect: E001
{ if = 1; }
