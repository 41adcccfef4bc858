let a = "outer"; in { a = "inner"; b = a; }
