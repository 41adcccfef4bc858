builtins.length (builtins.tryEval [ 1 2 ]).value
