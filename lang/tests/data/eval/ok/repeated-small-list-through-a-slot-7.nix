let g = y: builtins.concatLists [ [ y ] ]; a = g 3; b = if true then a else [ ]; in { inherit a b; l = [ a b ]; }
