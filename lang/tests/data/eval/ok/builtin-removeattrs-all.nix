builtins.removeAttrs { a = 1; } [ "a" ]
