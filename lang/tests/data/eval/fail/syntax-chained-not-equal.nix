# expect: E001
1 != 2 != 3
