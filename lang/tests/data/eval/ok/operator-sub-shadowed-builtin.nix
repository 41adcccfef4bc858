let __sub = a: b: "custom"; in 5 - 3
