(all@{ a, ... }: [ a all.b ]) { a = 1; b = 2; }
