# expect: E032
builtins.elemAt [ 1 ] (-1)
