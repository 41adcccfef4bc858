# expect: E040
# message-contains: \d
builtins.match "\\d+" "12"
