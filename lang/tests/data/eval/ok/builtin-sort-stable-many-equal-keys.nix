map (x: x.i) (builtins.sort (a: b: a.k < b.k) (builtins.genList (i: { k = builtins.bitAnd i 3; inherit i; }) 40))
