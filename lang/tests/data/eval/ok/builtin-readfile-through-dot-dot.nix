builtins.readFile "${toString ./lib}/tree/../data.txt"
