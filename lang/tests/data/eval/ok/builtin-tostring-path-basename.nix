builtins.baseNameOf (toString ./lib/helper.nix)
