# NaN is neither less nor greater than anything: `lessThan` is no order on a list
# holding it, and the list comes out as Nix's `std::stable_sort` leaves it
let nan = (1.0e308 * 10) * 0; in
[
  (builtins.sort builtins.lessThan [ 3.0 nan 1.0 2.0 nan 0.5 ])
  (builtins.sort builtins.lessThan [ nan 3.0 nan 1.0 2.0 nan 0.5 7.0 nan 9.0 1.5 2.5 nan 4.0 0.1 0.2 nan 8.0 ])
  (builtins.sort (a: b: a < b) [ nan 3.0 nan 1.0 2.0 nan 0.5 7.0 nan 9.0 1.5 2.5 nan 4.0 0.1 0.2 nan 8.0 ])
]
