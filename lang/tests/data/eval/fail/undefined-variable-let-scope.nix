# expect: E010
(let a = 1; in a) + a
