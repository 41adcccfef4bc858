# A chain of `++` (grouped to the right) is one list of every operand's elements in
# order; where at most one operand is not empty, that list itself (so a function in
# it is equal to itself by identity, as after nested `++`).
let
  f = x: x;
  l = [ f 2 ];
  e = [ ];
in
[
  ([ 1 ] ++ [ 2 3 ] ++ [ ] ++ [ 4 ] ++ l ++ e)
  (e ++ l ++ e ++ e)
  ((e ++ l ++ e) == l)
  ((e ++ e ++ l) == l)
  ((l ++ e ++ e) == l)
  (e ++ e ++ e)
  ([ 1 ] ++ ([ 2 ] ++ [ 3 ]) ++ [ 4 ])
  (builtins.length (builtins.foldl' (acc: i: acc ++ [ i ] ++ [ (i * 2) ] ++ e) [ ] (builtins.genList (i: i) 50)))
  (builtins.elem f (e ++ [ f ] ++ e))
]
