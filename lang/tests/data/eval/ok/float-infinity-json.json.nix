let inf = 1.0e308 * 10; in [ inf (-inf) ]
