# expect: E020
1 && true
