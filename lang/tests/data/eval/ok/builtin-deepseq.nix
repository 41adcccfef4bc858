builtins.deepSeq { a = [ 1 2 ]; } "ok"
