# expect: E020
let n = 1; in n.a
