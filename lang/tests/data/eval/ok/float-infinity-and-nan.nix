let inf = 1.0e308 * 10; nan = inf - inf; in [ inf (-inf) nan (nan == nan) (inf == inf) (toString inf) (1 / inf) (inf > 1.0e308) ]
