let fix = f: let x = f x; in x; in (fix (self: { a = 1; b = self.a + 1; c = self.b * 10; })).c
