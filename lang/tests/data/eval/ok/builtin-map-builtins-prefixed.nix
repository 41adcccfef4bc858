builtins.map builtins.toString [ 1 true null "s" ]
