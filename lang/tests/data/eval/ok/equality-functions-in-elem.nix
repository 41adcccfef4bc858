let f = x: x; in [ (builtins.elem f [ f ]) (builtins.elem (x: x) [ (x: x) ]) ]
