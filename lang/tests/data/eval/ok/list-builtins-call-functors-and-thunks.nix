# filter, concatMap, groupBy, partition, any and all call a function given as a
# set with __functor or as a thunk, as Nix does
let
  f = { __functor = self: x: x > 1; };
  g = { __functor = self: x: [ x x ]; };
  k = builtins.head [ (x: builtins.substring 0 1 x) ];
in [
  (builtins.filter f [ 1 2 3 ])
  (builtins.concatMap g [ 1 2 ])
  (builtins.groupBy k [ "ab" "ac" "bd" ])
  (builtins.partition f [ 0 5 ])
  (builtins.any f [ 0 1 ])
  (builtins.all f [ 2 3 ])
  (builtins.concatMap (builtins.head [ (x: [ x ]) ]) [ 7 ])
]
