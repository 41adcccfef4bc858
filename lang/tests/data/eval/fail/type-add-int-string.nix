# expect: E020
1 + "a"
