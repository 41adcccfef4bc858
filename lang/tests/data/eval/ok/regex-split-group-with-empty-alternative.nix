builtins.split "(|a)" "bab"
