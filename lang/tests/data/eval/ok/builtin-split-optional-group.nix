builtins.split "(a)?b" "bab"
