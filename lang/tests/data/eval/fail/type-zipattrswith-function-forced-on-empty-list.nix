# expect: E020
builtins.zipAttrsWith null [ ]
