let t = builtins.tail [ 0 1 2 ]; u = t; in [ t u (builtins.tail [ 5 6 ]) ]
