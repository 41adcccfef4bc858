# expect: E036
# message-contains: currentTime
builtins.currentTime
