# expect: E020
builtins.filter null [ ]
