# expect: E001
{ a = 1; } }
