[ (toString 1) (toString "s") (toString true) (toString false) (toString null) (toString [ 1 "a" [ 2 3 ] ]) (toString 1.5) (toString 0.1) ]
