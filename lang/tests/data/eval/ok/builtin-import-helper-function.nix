let h = import ./lib/helper.nix; in map h.double h.list
