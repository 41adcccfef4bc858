builtins.fromJSON "{\"a\": 1, \"a\": 2}"
