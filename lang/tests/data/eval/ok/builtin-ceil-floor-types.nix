[ (builtins.typeOf (builtins.ceil 1.5)) (builtins.typeOf (builtins.floor 1)) ]
