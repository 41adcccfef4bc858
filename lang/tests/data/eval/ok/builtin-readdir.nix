builtins.readDir ./lib/tree
