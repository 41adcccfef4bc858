builtins.listToAttrs [ { name = "a"; value = 1; extra = throw "ignored"; } ]
