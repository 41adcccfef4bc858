let __mul = a: b: "mul"; __div = a: b: "div"; in [ (2 * 3) (6 / 2) ]
