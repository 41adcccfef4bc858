# expect: E010
let f = x: x; in f or
