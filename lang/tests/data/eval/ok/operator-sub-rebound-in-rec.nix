rec { __sub = a: b: 42; x = 5 - 3; }.x
