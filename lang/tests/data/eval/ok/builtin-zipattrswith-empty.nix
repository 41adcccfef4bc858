builtins.zipAttrsWith (n: v: v) [ ]
