[ (1 ? a) ("s" ? a) (null ? a) ]
