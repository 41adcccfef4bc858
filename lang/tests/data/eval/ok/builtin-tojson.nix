builtins.toJSON { a = 1; b = [ true null "s" ]; c = { d = 1.5; }; }
