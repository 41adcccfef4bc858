builtins.fromJSON "{\"a\": [1, 2.5, true, null, \"x\"], \"b\": {}}"
