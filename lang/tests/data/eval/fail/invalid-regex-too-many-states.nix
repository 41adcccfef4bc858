# expect: E040
# message-contains: memory limit
builtins.match "a{99999}" "a"
