# expect: E001
{ a = ; }
