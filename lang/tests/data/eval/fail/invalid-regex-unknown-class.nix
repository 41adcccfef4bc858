# expect: E040
# message-contains: word
builtins.match "[[:word:]]" "a"
