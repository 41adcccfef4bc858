# expect: E029
# message-contains: while calling function `inner`
let inner = x: throw "from inner"; outer = y: inner y; in outer 1
