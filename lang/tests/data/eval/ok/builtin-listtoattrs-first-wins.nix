builtins.listToAttrs [ { name = "a"; value = "first"; } { name = "a"; value = "second"; } ]
