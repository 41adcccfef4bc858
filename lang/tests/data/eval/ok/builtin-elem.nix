[ (builtins.elem 2 [ 1 2 3 ]) (builtins.elem "x" [ ]) (builtins.elem [ 1 ] [ [ 1 ] ]) (builtins.elem 1.0 [ 1 ]) ]
