builtins.readFile ./lib/data.txt
