# `genList` nested, as option values are generated: a 600 x 600 grid of integers,
# each row summed, the sums summed.
let
  row = i: builtins.genList (j: i * j + j) 600;
  grid = builtins.genList row 600;
in
builtins.foldl' (total: r: total + builtins.foldl' (sum: x: sum + x) 0 r) 0 grid
