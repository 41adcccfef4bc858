let xs = builtins.head [ [ 1 ] ]; in [ xs xs ]
