# expect: E039
# message-contains: cannot turn an integer into a string
# A chain of `+` adds its operands left to right: the integer added to the string
# stops it before the `throw` after it is evaluated.
"a" + "b" + 1 + (throw "never evaluated")
