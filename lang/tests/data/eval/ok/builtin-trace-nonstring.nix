builtins.trace { a = 1; } "ok"
