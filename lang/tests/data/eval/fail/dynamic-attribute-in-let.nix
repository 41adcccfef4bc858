# expect: E009
let ${"a"} = 1; in a
