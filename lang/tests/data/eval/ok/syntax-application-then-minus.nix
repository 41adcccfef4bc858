let f = 5; in f -1
