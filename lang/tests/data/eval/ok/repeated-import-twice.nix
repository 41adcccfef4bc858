[ (import ./lib/counter.nix) (import ./lib/counter.nix) ]
