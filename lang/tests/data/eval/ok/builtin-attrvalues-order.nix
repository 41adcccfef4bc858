builtins.attrValues { b = 2; a = 1; c = 3; }
