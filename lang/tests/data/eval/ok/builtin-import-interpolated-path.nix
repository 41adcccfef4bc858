let name = "number"; in import ./lib/${name}.nix
