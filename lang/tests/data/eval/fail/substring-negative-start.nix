# expect: E042
builtins.substring (-1) 2 "abc"
