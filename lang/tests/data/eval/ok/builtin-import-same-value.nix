let a = import ./lib/counter.nix; b = import ./lib/counter.nix; in [ a b (a == b) ]
