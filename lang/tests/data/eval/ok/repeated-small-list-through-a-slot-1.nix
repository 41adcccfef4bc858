let f = x: [ x ]; a = f 1; in [ a a ]
