builtins.sort (a: b: a < b) [ [ 2 ] [ 1 5 ] [ 1 ] [ ] ]
