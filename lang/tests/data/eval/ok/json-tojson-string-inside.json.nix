builtins.toJSON { a = [ 1 "x" ]; }
