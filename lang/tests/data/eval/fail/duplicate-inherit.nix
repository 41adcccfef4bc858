# expect: E008
let a = 1; in { inherit a; a = 2; }
