# expect: E010
# message-contains: __fromTOML
__fromTOML "a = 1"
