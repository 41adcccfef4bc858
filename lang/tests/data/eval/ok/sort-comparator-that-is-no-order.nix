# `sort` with comparators that are no strict weak order gives Nix's list, which
# depends on the steps of the C++ library's `std::stable_sort` (insertion in
# chunks of seven, merges through a buffer of half the list)
[
  (builtins.sort (a: b: a != b) [ 0 0 1 0 ])
  (builtins.sort (a: b: a != b) [ 3 2 1 0 3 ])
  (builtins.sort (a: b: a != b) [ 5 1 4 1 0 3 2 2 5 0 1 4 3 3 0 2 1 5 4 0 2 3 1 ])
  (builtins.sort (a: b: a <= b) [ 2 1 2 0 1 2 0 1 1 0 2 2 0 1 0 ])
  (builtins.sort (a: b: (a - b) * (a - b) > 4) [ 5 1 4 1 0 3 2 2 5 0 1 4 3 3 0 2 1 5 4 0 2 3 1 4 4 0 1 ])
  (builtins.sort (a: b: builtins.bitAnd (a + b) 1 == 1) [ 5 1 4 1 0 3 2 2 5 0 1 4 3 3 0 2 1 5 4 0 2 3 1 4 4 0 1 2 2 ])
]
