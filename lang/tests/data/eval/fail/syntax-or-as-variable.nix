# expect: E001
let or = 1; in or
