# `a: b: a < b` and `a: b: a > b` written out sort as the calls would
let
  ints = [ 5 3 9 3 (-1) 0 9 ];
  strings = [ "b" "a" "cc" "a" "" "c" ];
in
{
  intsUp = builtins.sort (a: b: a < b) ints;
  intsDown = builtins.sort (a: b: a > b) ints;
  stringsUp = builtins.sort (a: b: a < b) strings;
  stringsDown = builtins.sort (x: y: x > y) strings;
  mixed = builtins.sort (a: b: a < b) [ 2 1.5 1 ];
}
