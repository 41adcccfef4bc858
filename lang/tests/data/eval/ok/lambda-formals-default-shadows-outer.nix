let a = 100; in ({ a ? 1 }: a) { }
