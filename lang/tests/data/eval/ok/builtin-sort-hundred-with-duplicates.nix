builtins.sort (a: b: a < b) (builtins.genList (i: builtins.bitXor (i * 7) 13 - (i / 10) * 10) 100)
