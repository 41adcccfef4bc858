# expect: E020
# message-contains: the right side of `++`
# The innermost `++` checks its left, then its right side, before the outer ones
# check theirs: the set at the end is reported, not the integer at the start.
1 ++ [ ] ++ { }
