let f = { __functor = self: { __functor = s: x: x * 3; }; }; in f 7
