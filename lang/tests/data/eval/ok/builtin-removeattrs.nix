builtins.removeAttrs { a = 1; b = 2; c = 3; } [ "b" "missing" ]
