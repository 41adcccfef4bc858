# expect: E038
builtins.genericClosure { startSet = [ { key = 1; } { key = "a"; } ]; operator = x: [ ]; }
