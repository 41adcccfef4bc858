# expect: E035
builtins.readFile "${toString ./lib}/missing/../x.txt"
