# expect: E036
builtins.storePath "/nix/store/abc-x"
