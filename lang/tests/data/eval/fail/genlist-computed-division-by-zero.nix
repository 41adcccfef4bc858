# expect: E026
builtins.genList (i: 10 / (i - 1)) 3
