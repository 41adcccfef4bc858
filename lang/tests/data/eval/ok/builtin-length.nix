[ (builtins.length [ ]) (builtins.length [ 1 2 3 ]) ]
