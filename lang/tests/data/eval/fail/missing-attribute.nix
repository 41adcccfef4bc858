# expect: E021
# message-contains: did you mean `value`
{ value = 1; }.valeu
