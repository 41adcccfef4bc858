# expect: E024
let f = "f"; in f 1
