let s = { a = 1; }; in builtins.attrValues { p = s; q = s; }
