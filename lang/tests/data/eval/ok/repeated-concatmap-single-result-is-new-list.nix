# concatMap always makes a new list, even when one call's result is all of it
let
  a = [ 1 2 3 ];
  b = [ 4 5 ];
  c = [ 6 ];
in
[
  (builtins.concatMap (x: a) [ 1 ])
  a
  (builtins.concatMap (x: x) [ a [ ] ])
  (builtins.concatMap (x: x) [ [ ] b [ ] ])
  b
  (builtins.concatMap (x: c) [ 1 ])
  c
  (builtins.concatLists [ [ ] a ])
  a
]
