# expect: E020
builtins.foldl' null { } [ ]
