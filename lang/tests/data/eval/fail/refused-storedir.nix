# expect: E036
builtins.storeDir
