let f = { __functor = self: x: self.base + x; base = 10; }; in f 5
