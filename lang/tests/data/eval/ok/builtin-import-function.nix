import ./lib/function.nix { name = "mesh"; }
