# expect: E043
# max-steps: 10000
let loop = n: if n < 0 then 0 else loop (n + 1); in loop 0
