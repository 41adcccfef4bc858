# expect: E004
1.0e309
