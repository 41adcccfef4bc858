[ (toString 1.0) (toString 123456789.123) (toString 1.0e-7) (toString 2.5e20) (toString (-0.5)) ]
