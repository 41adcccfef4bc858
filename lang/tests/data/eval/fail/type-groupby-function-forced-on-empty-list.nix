# expect: E020
builtins.groupBy null [ ]
