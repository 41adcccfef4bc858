[ (builtins.head [ 1 2 3 ]) (builtins.tail [ 1 2 3 ]) (builtins.tail [ 1 ]) ]
