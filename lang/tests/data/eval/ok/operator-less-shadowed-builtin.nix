let __lessThan = a: b: "custom"; in 1 < 2
