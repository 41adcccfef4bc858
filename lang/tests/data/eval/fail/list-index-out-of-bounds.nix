# expect: E032
builtins.elemAt [ 1 2 ] 2
