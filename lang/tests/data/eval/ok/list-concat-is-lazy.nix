builtins.length ([ (throw "x") ] ++ [ 1 ])
