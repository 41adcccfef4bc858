let xs = builtins.genList (i: (i * 7919) - (i / 13) * 13 * 7919) 200; in builtins.length (builtins.sort (a: b: a < b) xs)
