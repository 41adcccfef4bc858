builtins.split "|a" "bab"
