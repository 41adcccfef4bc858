# A chain of `+` (grouped to the left) adds each operand as the nested `+` would:
# integers and floats as numbers, and once the sum is a string, every operand after
# it coerced into it (sets with `__toString` or `outPath`), a `-` ending the chain.
let
  s = "x";
  n = 3;
  shown = { __toString = self: "shown"; };
  out = { outPath = "out"; };
in
[
  ("a" + "b" + "c" + "d")
  (1 + 2 + 3 + 4)
  (1 + 2.5 + 3)
  (1.5 + 1 + 1)
  ("a" + s + "${toString n}" + s)
  ("a" + shown + out + "")
  ("" + "" + "")
  (1 + 2 - 3 + 4)
  ("a" + ("b" + "c") + "d")
  (builtins.foldl' (acc: i: acc + "-" + toString i + ".") "" (builtins.genList (i: i) 12))
  (let twice = x: x + "q" + x; in twice (twice "z"))
]
