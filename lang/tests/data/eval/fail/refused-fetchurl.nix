# expect: E036
builtins.fetchurl "https://example.org/a"
