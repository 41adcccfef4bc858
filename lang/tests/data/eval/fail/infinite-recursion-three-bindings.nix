# expect: E027
# message-contains: `a`
# message-contains: `b`
# message-contains: `c`
let a = b + 1; b = c + 1; c = a + 1; in a
