# expect: E041
# message-contains: is TOML 1.1
# TOML 1.1 escapes (`\e`, `\xHH`) are refused, as by Nix's TOML 1.0 parser
builtins.fromTOML "a = \"\\e\""
