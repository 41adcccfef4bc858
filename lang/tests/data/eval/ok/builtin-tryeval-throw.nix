builtins.tryEval (throw "caught")
