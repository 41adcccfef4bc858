# expect: E035
builtins.readFile ./lib/nope.txt
