# expect: E021
builtins.listToAttrs [ { value = 1; } ]
