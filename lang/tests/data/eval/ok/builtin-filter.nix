builtins.filter (x: x > 2) [ 1 5 2 4 3 ]
