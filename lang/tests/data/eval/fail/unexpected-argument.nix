# expect: E022
# message-contains: `b`
({ a }: a) { a = 1; b = 2; }
