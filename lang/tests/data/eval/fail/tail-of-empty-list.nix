# expect: E033
builtins.tail [ ]
