# expect: E010
# message-contains: e6
1e6
