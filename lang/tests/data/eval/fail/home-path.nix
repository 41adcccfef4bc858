# expect: E012
~/config.nix
