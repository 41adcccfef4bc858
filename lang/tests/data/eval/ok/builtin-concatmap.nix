builtins.concatMap (x: [ x x ]) [ 1 2 3 ]
