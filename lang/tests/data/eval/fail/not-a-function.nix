# expect: E024
1 2
