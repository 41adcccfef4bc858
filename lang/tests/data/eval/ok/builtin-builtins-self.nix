builtins.typeOf builtins.builtins.builtins.map
