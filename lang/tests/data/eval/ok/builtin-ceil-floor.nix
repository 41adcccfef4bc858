[ (builtins.ceil 1.2) (builtins.floor 1.8) (builtins.ceil (-1.2)) (builtins.floor (-1.2)) (builtins.ceil 3) (builtins.floor 2.0) ]
