# expect: E010
# message-contains: did you mean `value`
let value = 1; in valeu
