(builtins.tryEval (throw "x")).value
