# expect: E028
let f = n: if n == 0 then 0 else 1 + f (n - 1); in f 1000000
