let pos = builtins.unsafeGetAttrPos "b" { a = 1;
  b = 2; }; in [ pos.line pos.column (baseNameOf pos.file) ]
