# expect: E030
# message-contains: stop here
abort "stop here"
