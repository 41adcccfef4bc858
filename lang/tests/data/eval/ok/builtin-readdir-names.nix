builtins.attrNames (builtins.readDir ./lib/pkg)
