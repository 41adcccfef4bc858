let f = x: x; in [ (f == f) ([ f ] == [ f ]) ({ a = f; } == { a = f; }) ]
