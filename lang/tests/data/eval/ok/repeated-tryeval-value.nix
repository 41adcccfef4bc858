let s = { a = 1; }; in [ s (builtins.tryEval s).value ]
