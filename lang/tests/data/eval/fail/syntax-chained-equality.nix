# expect: E001
1 == 1 == true
