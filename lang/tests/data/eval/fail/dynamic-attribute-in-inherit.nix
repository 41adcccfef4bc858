# expect: E009
let s = { a = 1; }; in { inherit (s) ${"a" + ""}; }
