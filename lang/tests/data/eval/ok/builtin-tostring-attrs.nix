[ (toString { __toString = self: "x${toString self.n}"; n = 3; }) (toString { outPath = "out"; }) ]
