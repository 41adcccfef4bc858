{ a = 1; b = throw "lazy"; }.a
