builtins.mapAttrs (name: value: "${name}=${toString value}") { a = 1; b = 2; }
