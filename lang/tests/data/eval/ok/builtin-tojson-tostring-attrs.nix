builtins.toJSON [ { __toString = s: "str"; } { outPath = "/out"; x = 1; } ]
