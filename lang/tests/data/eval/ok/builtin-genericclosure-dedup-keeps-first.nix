builtins.genericClosure { startSet = [ { key = "a"; v = 1; } { key = "a"; v = 2; } { key = "b"; } ]; operator = x: [ ]; }
