builtins.foldl' (acc: x: acc + x) 0 [ 1 2 3 4 5 ]
