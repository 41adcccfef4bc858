# expect: E029
# message-contains: boom
throw "boom"
