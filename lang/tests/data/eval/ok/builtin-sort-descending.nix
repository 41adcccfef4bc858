builtins.sort (a: b: a > b) [ 3 1 2 ]
