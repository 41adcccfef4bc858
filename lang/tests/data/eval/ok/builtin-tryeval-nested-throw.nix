builtins.tryEval (let f = x: if x == 0 then throw "zero" else f (x - 1); in f 10)
