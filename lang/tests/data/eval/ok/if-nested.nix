let f = n: if n < 0 then "neg" else if n == 0 then "zero" else "pos"; in map f [ (-1) 0 1 ]
