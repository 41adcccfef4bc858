# expect: E028
let f = n: if n == 0 then [ ] else [ (f (n - 1)) ]; in f 1000000
