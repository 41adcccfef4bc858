# `true` and `false` rank as Nix's start-up symbols too.
rec { b = true; a = false; true = [ 1 ]; false = [ 2 ]; }
