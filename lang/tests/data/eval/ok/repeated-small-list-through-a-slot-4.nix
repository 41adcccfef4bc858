let l = builtins.map (x: [ x ]) [ 1 2 ]; in [ l (builtins.elemAt l 0) (builtins.elemAt l 0) ]
