# expect: E041
# message-contains: is TOML 1.1
# a line break inside an inline table is TOML 1.1, refused as by Nix
builtins.fromTOML "a = {\n  b = 1 }"
