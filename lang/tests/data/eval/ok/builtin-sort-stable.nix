builtins.sort (a: b: a.k < b.k) [ { k = 2; v = "a"; } { k = 1; v = "b"; } { k = 2; v = "c"; } { k = 1; v = "d"; } { k = 0; v = "e"; } ]
