let n = "x"; in { x.y = 1; } ? ${n}.y
