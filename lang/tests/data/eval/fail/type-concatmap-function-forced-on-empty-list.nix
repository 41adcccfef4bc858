# expect: E020
builtins.concatMap null [ ]
