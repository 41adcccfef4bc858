builtins.split "a" ""
