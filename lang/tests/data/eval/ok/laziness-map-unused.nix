builtins.length (map (x: throw "no") [ 1 2 3 ])
