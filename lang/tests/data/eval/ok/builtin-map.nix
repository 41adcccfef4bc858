map (x: x * x) [ 1 2 3 4 ]
