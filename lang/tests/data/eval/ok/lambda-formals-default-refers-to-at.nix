(args@{ a ? 1, b ? args.a + 1 }: [ a b ]) { a = 5; }
