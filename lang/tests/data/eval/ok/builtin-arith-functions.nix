[ (builtins.add 1 2) (builtins.sub 5 7) (builtins.mul 3 4) (builtins.div 9 2) (builtins.add 1.5 1) (builtins.div 1 4.0) ]
