let a' = 1; a'' = 2; a-b = 3; _x = 4; in [ a' a'' a-b _x ]
