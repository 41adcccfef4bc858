builtins.foldl' (a: b: throw "no") "start" [ ]
