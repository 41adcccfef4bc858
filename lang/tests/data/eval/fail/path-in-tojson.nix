# expect: E037
builtins.toJSON { p = ./lib/x.txt; }
