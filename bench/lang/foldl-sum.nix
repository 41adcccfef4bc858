# `foldl'` over a list of 1,000,000 elements made by `genList`.
builtins.foldl' (sum: x: sum + x) 0 (builtins.genList (i: i) 1000000)
