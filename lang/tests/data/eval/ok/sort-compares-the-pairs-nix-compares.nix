# which pairs `sort` asks its comparator about, and in which order, is Nix's: a
# comparator that fails on one pair fails the sort exactly when Nix compares it
let
  failingOn = x: y: a: b: if a == x && b == y then throw "compared ${toString x} with ${toString y}" else a < b;
  list = [ 9 4 7 1 8 2 6 3 5 0 11 10 15 12 14 13 ];
  try = x: y: (builtins.tryEval (builtins.sort (failingOn x y) list)).success;
in
builtins.genList (i: builtins.genList (j: try i j) 16) 16
