builtins.genericClosure { startSet = [ { key = 1; } { key = 1.0; } { key = 2.5; } ]; operator = x: [ ]; }
