# A chain of `++` or `//` evaluates each operand as deep as the nested operators
# would: an operator is entered once the operand to its left is done, so a
# recursion through the first operand of a three-operand chain 60,000 calls deep
# stays within the depth bound (it took one level more per operator when every
# operator of a chain was entered first).
let
  lists = n: if n == 0 then [ n ] else lists (n - 1) ++ [ ] ++ [ ];
  sets = n: if n == 0 then { a = n; } else sets (n - 1) // { } // { };
in
[ (lists 60000) (sets 60000) ]
