# `==` and `elem` on numbers, Booleans, null, strings and paths, evaluated or
# behind thunks already forced, across types
let
  a = 1;
  b = 1.0;
  s = "x";
  t = true;
  n = null;
  forced = builtins.head [ (a + 0) ];
  xs = [ 1 "1" 1.0 true null "x" ./. ];
in
builtins.seq forced [
  (a == b) (b == a) (a == s) (s == "x") (t == true) (n == null) (n == false) (a == t)
  (b == 1.5) (2 == 2.0) ("1" == 1) (./. == ./.) (./. == "/") (n == 0) (false == 0)
  (builtins.elem 1.0 xs) (builtins.elem "1" xs) (builtins.elem false xs) (builtins.elem ./. xs)
  (forced == 1) (forced == b) (forced == "1") (xs == [ 1 "1" 1.0 true null "x" ./. ])
  ([ 1 ] == [ 1.0 ]) ({ a = 1; } == { a = 1.0; }) ([ forced ] == [ a ])
]
