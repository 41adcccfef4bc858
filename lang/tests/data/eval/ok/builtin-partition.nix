builtins.partition (x: x > 2) [ 1 3 2 4 ]
