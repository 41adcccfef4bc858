let f = x: assert x > 0; x * 2; in f 3
