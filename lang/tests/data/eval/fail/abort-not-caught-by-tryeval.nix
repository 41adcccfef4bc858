# expect: E030
builtins.tryEval (abort "x")
