(import ./lib/helper.nix).greeting
