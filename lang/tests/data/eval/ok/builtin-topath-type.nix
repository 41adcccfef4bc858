builtins.typeOf (builtins.toPath "/x")
