builtins.listToAttrs [ { name = "a"; value = 1; } { name = "b"; value = 2; } ]
