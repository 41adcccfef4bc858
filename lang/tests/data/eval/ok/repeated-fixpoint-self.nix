let fix = f: let x = f x; in x; in fix (self: { a = 1; me = self; })
