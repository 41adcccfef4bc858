# arithmetic on integers already evaluated is computed when stored, but an
# overflow is not raised unless the value is needed
let
  constant = x: 1;
  n = 9223372036854775807;
  m = n - 1;
  xs = [ (n + 1) (m * 2) (m + 1) ];
in
[ (constant (n + 1)) (builtins.length xs) (builtins.elemAt xs 2) (constant (n * n)) ]
