let xs = [ 1 (builtins.head xs) ]; in xs
