# expect: E027
# message-contains: `a`
# message-contains: `b`
let a = b; b = a; in a
