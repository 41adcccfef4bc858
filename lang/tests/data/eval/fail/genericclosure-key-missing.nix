# expect: E021
builtins.genericClosure { startSet = [ { } ]; operator = x: [ ]; }
