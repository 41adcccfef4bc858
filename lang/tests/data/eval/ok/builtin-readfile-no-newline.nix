builtins.readFile ./lib/no-newline.txt
