builtins.split "[[:space:]]*" " a b "
