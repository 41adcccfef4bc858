let f = x: [ x x ]; r = rec { p = f 1; q = p; }; in [ r.p r.q r ]
