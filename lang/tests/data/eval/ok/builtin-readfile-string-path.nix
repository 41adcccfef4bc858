builtins.readFile (toString ./lib/data.txt)
