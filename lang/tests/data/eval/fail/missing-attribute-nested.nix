# expect: E021
# message-contains: `a.c`
{ a.b = 1; }.a.c
