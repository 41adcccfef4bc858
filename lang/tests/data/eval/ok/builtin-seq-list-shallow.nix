builtins.seq [ (throw "inner") ] "ok"
