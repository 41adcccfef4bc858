let a = builtins.genList (i: [ i ]) 2; b = builtins.elemAt a 1; in { inherit a b; c = b; }
