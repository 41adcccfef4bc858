# TOML 1.0 that looks like what TOML 1.1 added: line breaks in an array inside an
# inline table, a trailing comma in an array, escaped backslashes before e and x
builtins.fromTOML "a = { b = [\n  1,\n  2, ], c = \"\\\\e\\\\x41\" }\nd = '\\e'"
