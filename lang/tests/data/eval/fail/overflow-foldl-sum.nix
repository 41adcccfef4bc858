# expect: E025
builtins.foldl' builtins.add 9223372036854775800 [ 1 2 3 4 5 ]
