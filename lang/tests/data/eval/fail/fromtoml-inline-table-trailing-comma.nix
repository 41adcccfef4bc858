# expect: E041
# message-contains: is TOML 1.1
# a comma after an inline table's last value is TOML 1.1, refused as by Nix
builtins.fromTOML "a = { b = 1, }"
