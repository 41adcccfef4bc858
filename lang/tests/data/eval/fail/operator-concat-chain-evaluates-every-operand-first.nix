# expect: E029
# message-contains: the last operand
# A chain of `++` evaluates its operands left to right before it checks any: the
# integer on the left is not a list, but the `throw` at the end is reached first.
1 ++ [ ] ++ (throw "the last operand")
