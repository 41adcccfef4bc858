# expect: E011
a@{ a }: a
