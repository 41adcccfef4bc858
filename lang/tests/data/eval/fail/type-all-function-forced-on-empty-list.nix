# expect: E020
builtins.all null [ ]
