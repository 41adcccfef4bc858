builtins.genericClosure { startSet = [ { key = 1; } ]; operator = item: if item.key < 5 then [ { key = item.key + 1; } { key = item.key * 2; } ] else [ ]; }
