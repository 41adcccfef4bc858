# expect: E035
builtins.readDir ./lib/x.txt
