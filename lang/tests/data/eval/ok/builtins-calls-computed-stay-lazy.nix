# foldl', genList, sort, filter, any and all compute a call of a plain lambda
# (arithmetic, comparison, `if`, `or`) without calling it: the results are the
# calls' results, and what a call would fail on stays a thunk until it is needed.
let
  records = builtins.genList (i: { p = 3 - i / 2; n = "r${toString i}"; }) 6;
  k = 5;
in
{
  lazyGenList = builtins.length (builtins.genList (i: 10 / (i - 1)) 3);
  firstOfLazy = builtins.elemAt (builtins.genList (i: 10 / (i - 1)) 3) 0;
  lastOfLazy = builtins.elemAt (builtins.genList (i: 10 / (i - 1)) 3) 2;
  unforcedFunction = builtins.length (builtins.genList (throw "never") 3);
  sum = builtins.foldl' (a: b: a + b * 2) 0 (builtins.genList (i: i) 10);
  outer = builtins.genList (i: i * k + 1) 4;
  ifs = builtins.genList (i: if i == 0 then 100 else -i) 3;
  sorted = map (r: r.n) (builtins.sort (a: b: a.p < b.p || (a.p == b.p && a.n > b.n)) records);
  kept = map (r: r.n) (builtins.filter (r: (r.q or 2) >= r.p) records);
  anyEqual = builtins.any (x: x == 3) [ 1 2 3 ];
  allLess = builtins.all (x: x < 3) [ 1 2 3 ];
  strings = builtins.sort (a: b: a > b) [ "b" "a" "c" ];
  negated = builtins.filter (x: !x) [ true false true ];
  mixed = builtins.foldl' (a: b: a + b) 0 [ 1 2.5 3 ];
  skipsFailing = builtins.length (builtins.filter (x: x != 0) (builtins.genList (i: 1 / (i - i)) 0));
}
