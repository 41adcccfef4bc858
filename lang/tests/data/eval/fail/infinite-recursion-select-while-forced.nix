# expect: E027
# message-contains: infinite recursion
# `x.a` is selected while `x` is being forced: the select's shortcut through an
# evaluated thunk finds `x` being forced, not evaluated, and takes the long way,
# which reports the cycle
let x = (let y = x.a; in y); in x
