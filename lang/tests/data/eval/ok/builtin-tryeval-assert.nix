builtins.tryEval (assert false; 1)
