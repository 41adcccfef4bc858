builtins.toJSON [ "ÿ" ]
