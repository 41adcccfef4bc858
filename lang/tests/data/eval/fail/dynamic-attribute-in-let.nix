# expect: E009
let ${"a" + "b"} = 1; in ab
