# expect: E001
let f = 5; in [ f -1 ]
