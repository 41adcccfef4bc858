# expect: E020
builtins.any null [ ]
