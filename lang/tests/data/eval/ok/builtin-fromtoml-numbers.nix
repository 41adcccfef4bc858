builtins.fromTOML "a = inf\nb = nan\nc = -0.0\nd = 1e10\ne = 0x1F\nf = 0o17\ng = 0b101\nh = 1_000\ni = -inf\nj = +1.5"
