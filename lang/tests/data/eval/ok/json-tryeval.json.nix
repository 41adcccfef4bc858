[ (builtins.tryEval 1) (builtins.tryEval (throw "x")) ]
