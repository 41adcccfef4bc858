builtins.attrNames (builtins.fromJSON "{\"b\":1,\"a\":2,\"c\":3}")
