# expect: E001
let a = 1;
