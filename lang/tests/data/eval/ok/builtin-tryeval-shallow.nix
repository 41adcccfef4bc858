(builtins.tryEval [ (throw "inner") ]).success
