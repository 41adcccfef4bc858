# genericClosure keeps the keys it has seen sorted: integers alone and strings alone
# compare without evaluation; a key of another kind after them (a float equal to an
# integer seen, a list) is compared with `<` against every kind of key before it.
let
  descending = builtins.genericClosure {
    startSet = [ { key = 300; } ];
    operator = item: if item.key > 0 then [ { key = item.key - 1; } { key = item.key - 2; } ] else [ ];
  };
  strings = builtins.genericClosure {
    startSet = [ { key = "k9"; n = 9; } ];
    operator = item: if item.n > 0 then [ { key = "k${toString (item.n - 1)}"; n = item.n - 1; } { key = "k9"; n = 0; } ] else [ ];
  };
  numbers = builtins.genericClosure {
    startSet = [ { key = 3; } { key = 1; } { key = 2; } { key = 2.0; } { key = 0.5; } { key = 1; } ];
    operator = item: [ ];
  };
  lists = builtins.genericClosure {
    startSet = [ { key = [ 2 ]; } { key = [ 1 "a" ]; } { key = [ 2 ]; } { key = [ ]; } ];
    operator = item: [ ];
  };
in
[
  (builtins.length descending)
  (builtins.head descending).key
  (builtins.elemAt descending 300).key
  (map (item: item.key) strings)
  (map (item: item.key) numbers)
  (map (item: item.key) lists)
]
