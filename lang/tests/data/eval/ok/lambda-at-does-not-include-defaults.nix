(all@{ a ? 1, ... }: all) { b = 2; }
