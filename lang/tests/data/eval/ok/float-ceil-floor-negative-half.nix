[ (builtins.ceil (-0.5)) (builtins.floor 0.5) (builtins.floor (-0.5)) (builtins.ceil 0.0) ]
