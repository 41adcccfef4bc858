(builtins.listToAttrs [ { name = "a"; value = throw "lazy"; } { name = "b"; value = 2; } ]).b
