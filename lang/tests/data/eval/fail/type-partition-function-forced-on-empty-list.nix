# expect: E020
builtins.partition null [ ]
