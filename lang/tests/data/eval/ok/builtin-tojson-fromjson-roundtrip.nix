let v = { a = [ 1 2 { b = "c"; } ]; d = null; }; in builtins.fromJSON (builtins.toJSON v) == v
