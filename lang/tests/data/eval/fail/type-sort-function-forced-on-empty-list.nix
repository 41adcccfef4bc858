# expect: E020
builtins.sort null [ ]
