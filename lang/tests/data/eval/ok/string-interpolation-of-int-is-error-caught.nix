builtins.tryEval (builtins.seq 1 "ok")
