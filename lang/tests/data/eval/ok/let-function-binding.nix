let f = x: x * 2; in f 21
