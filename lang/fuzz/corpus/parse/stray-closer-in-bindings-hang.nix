builtins.baseNameOf (. a) {+ "/helper.nix")
