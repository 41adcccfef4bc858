[ (builtins.typeOf lib/data.txt) (baseNameOf lib/data.txt) (builtins.readFile lib/data.txt) ]
