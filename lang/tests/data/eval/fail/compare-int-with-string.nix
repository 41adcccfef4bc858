# expect: E038
1 < "a"
