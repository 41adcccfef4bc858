# expect: E035
builtins.readFile "${toString ./lib/x.txt}/"
