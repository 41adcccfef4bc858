builtins.readFile ./lib/empty.txt
