# expect: E020
builtins.sort (a: b: 1) [ 2 1 ]
