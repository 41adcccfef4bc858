builtins.baseNameOf (./lib + "/helper.nix")
