# expect: E033
builtins.head [ ]
