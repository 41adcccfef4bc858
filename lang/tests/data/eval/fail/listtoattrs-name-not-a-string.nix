# expect: E020
builtins.listToAttrs [ { name = 1; value = 2; } ]
