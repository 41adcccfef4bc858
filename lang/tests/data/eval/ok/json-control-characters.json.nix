builtins.fromJSON "\"\\u0001\\u001f\\b\\f\\u007f\""
