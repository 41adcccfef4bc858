# hand-written: `builtins.warn` is newer than Nix 2.8 (Nix 2.23); it returns its second argument, as later Nix does
builtins.warn "careful" { a = 1; }
