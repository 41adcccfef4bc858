builtins.tryEval (1 + 1)
