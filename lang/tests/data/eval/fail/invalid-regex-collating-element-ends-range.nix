# expect: E040
builtins.match "[1-[.three.]]+" "123"
