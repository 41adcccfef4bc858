# expect: E027
# message-contains: infinite recursion
# `x + 1` is stored while `x` is being forced: looking whether `x` already has a
# value (to add eagerly) finds it being forced, not evaluated, and leaves the sum lazy
let x = (let y = x + 1; in y); in x
