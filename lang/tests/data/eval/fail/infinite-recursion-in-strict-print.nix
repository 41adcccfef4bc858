# expect: E027
# message-contains: `b`
let s = { a = 1; b = s.b; }; in s
