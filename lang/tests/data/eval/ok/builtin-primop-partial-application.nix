let add1 = builtins.add 1; in map add1 [ 1 2 3 ]
