builtins.length [ (x: x) (y: y) ]
