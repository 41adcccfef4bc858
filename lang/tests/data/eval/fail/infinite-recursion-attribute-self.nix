# expect: E027
# message-contains: `a`
let s = { a = s.a; }; in s.a
