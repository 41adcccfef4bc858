let twice = f: x: f (f x); in twice (twice (x: x * 2)) 1
