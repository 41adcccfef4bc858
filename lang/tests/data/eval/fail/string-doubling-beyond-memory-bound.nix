# expect: E046
# max-memory: 1048576
# message-contains: while evaluating `doubled`
let
  double = s: n: if n == 0 then s else double (s + s) (n - 1);
  doubled = double "x" 40;
in
builtins.stringLength doubled
