# expect: E036
# message-contains: toFile
builtins.toFile "name" "content"
