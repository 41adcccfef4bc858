[ (builtins.pathExists ./lib/data.txt) (builtins.pathExists ./lib/missing.txt) (builtins.pathExists ./lib) (builtins.pathExists ./lib/tree/link) ]
