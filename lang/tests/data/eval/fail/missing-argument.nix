# expect: E023
# message-contains: `b`
({ a, b }: a) { a = 1; }
