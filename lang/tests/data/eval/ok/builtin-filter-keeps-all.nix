let xs = [ 1 2 ]; in builtins.filter (x: true) xs
