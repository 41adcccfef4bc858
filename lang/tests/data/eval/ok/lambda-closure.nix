let make = n: x: x + n; add5 = make 5; in add5 10
