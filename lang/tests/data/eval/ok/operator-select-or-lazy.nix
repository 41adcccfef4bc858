{ a = 1; }.a or (throw "unused")
