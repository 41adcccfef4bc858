# expect: E001
let
  a = 1 +;
  b = ];
in a
