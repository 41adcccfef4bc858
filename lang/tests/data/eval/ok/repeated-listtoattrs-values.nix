let v = { a = 1; }; in builtins.listToAttrs [ { name = "x"; value = v; } { name = "y"; value = v; } ]
