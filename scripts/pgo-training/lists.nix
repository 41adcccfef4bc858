# Training for scripts/release (not a benchmark): the list builtins in loops, so that
# a profile-guided meshc does not take them for cold code.
let
  n = 20000;
  xs = builtins.genList (i: i * 7 - (i / 13) * 91) n;
  words = map (i: "w${toString (i - (i / 97) * 97)}") xs;
  pairs = builtins.genList (i: { name = "k${toString i}"; value = i; }) 3000;
  grouped = builtins.groupBy (word: builtins.substring 0 2 word) words;
  parts = builtins.partition (x: x - (x / 2) * 2 == 0) xs;
in
{
  sum = builtins.foldl' (acc: x: acc + x) 0 xs;
  kept = builtins.length (builtins.filter (x: x > 500) xs);
  doubled = builtins.foldl' (acc: x: acc + x) 0 (map (x: x * 2) xs);
  flat = builtins.length (builtins.concatMap (x: [ x (x + 1) ]) xs);
  lists = builtins.length (builtins.concatLists (map (x: [ x ]) xs));
  sorted = builtins.head (builtins.sort (a: b: a < b) xs);
  sortedWords = builtins.elemAt (builtins.sort builtins.lessThan words) 100;
  member = builtins.length (builtins.filter (x: builtins.elem x [ 3 14 15 92 65 ]) xs);
  some = builtins.any (x: x == -1) xs;
  every = builtins.all (x: x > -100000) xs;
  set = builtins.length (builtins.attrNames (builtins.listToAttrs pairs));
  groups = builtins.length (builtins.attrNames grouped);
  evens = builtins.length parts.right;
  tails = builtins.length (builtins.tail xs);
  nested = builtins.length (builtins.genList (i: builtins.genList (j: i * j) 20) 500);
  unique = builtins.length (builtins.foldl' (seen: x: if builtins.elem x seen then seen else seen ++ [ x ]) [ ] (builtins.genList (i: i - (i / 50) * 50) 2000));
}
