builtins.fromTOML (builtins.readFile ./lib/config.toml)
