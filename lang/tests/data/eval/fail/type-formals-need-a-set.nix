# expect: E020
({ a }: a) 1
