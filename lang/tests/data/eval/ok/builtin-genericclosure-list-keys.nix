builtins.genericClosure { startSet = [ { key = [ 1 2 ]; } ]; operator = x: if builtins.length x.key < 4 then [ { key = x.key ++ [ 0 ]; } ] else [ ]; }
