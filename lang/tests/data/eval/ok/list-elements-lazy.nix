builtins.length [ (throw "a") (throw "b") ]
