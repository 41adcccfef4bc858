import ./lib/nested/inner.nix
