builtins.sort builtins.lessThan [ 5 3 9 1 4 1 ]
