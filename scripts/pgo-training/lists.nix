# Training for scripts/release (not a benchmark): the list builtins in loops, so that
# a profile-guided meshc does not take them for cold code.
let
  n = 20000;
  # spread over 0 .. 20010 (i * 7919 modulo 20011)
  xs = builtins.genList (i: i * 7919 - (i * 7919 / 20011) * 20011) n;
  words = map (x: "w${toString (x - (x / 997) * 997)}") xs;
  pairs = builtins.genList (i: { name = "k${toString i}"; value = i; }) 3000;
  grouped = builtins.groupBy (word: builtins.substring 0 2 word) words;
  parts = builtins.partition (x: x - (x / 2) * 2 == 0) xs;
in
{
  sum = builtins.foldl' (acc: x: acc + x) 0 xs;
  kept = builtins.length (builtins.filter (x: x > 10000) xs);
  doubled = builtins.foldl' (acc: x: acc + x) 0 (map (x: x * 2) xs);
  flat = builtins.length (builtins.concatMap (x: [ x (x + 1) ]) xs);
  lists = builtins.foldl' (acc: x: acc + x) 0 (builtins.concatLists (map (x: [ x ]) xs));
  sorted = builtins.head (builtins.sort (a: b: a < b) xs);
  sortedWords = builtins.elemAt (builtins.sort builtins.lessThan words) 100;
  member = builtins.length (builtins.filter (x: builtins.elem x [ 3 14 15 92 65 ]) xs);
  some = builtins.any (x: x == -1) xs;
  every = builtins.all (x: x > -100000) xs;
  set = builtins.length (builtins.attrNames (builtins.listToAttrs pairs));
  groups = builtins.length (builtins.attrNames grouped);
  evens = builtins.length parts.right;
  tails = builtins.length (builtins.tail xs);
  nested = builtins.foldl' (total: row: total + builtins.foldl' (sum: x: sum + x) 0 row) 0 (builtins.genList (i: builtins.genList (j: i * j + j) 20) 500);
  unique = builtins.length (builtins.foldl' (seen: x: if builtins.elem x seen then seen else seen ++ [ x ]) [ ] (builtins.genList (i: i - (i / 50) * 50) 2000));
}
