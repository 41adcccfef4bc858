let
  p = n: s: let r = builtins.unsafeGetAttrPos n s; in if r == null then null else [ r.line r.column ];
  x = 1;
  y = 2;
in [
  (p "a" { a = 1; })
  (p "b" { a.c = 1;
           b = 2; })
  (p "a" { a.b = 1; })
  (p "x" { inherit x; })
  (p "x" { inherit   y x; })
  (p "y" { inherit ({ y = 1; })  y; })
  (p "d" { ${"d"} = 1; })
  (p "d" { ${"d" + ""} = 1; })
  (p "e" { "e" = 1; })
  (p "f" (rec { f = 1; }))
  (p "g" ({ g = 1; } // { }))
]
