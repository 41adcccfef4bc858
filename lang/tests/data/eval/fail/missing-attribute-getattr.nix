# expect: E021
builtins.getAttr "x" { y = 1; }
