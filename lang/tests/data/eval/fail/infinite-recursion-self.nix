# expect: E027
# message-contains: `x`
let x = x; in x
