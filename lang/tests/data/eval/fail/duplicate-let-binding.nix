# expect: E008
let a = 1; a = 2; in a
