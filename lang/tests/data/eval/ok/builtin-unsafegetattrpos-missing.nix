builtins.unsafeGetAttrPos "x" { a = 1; }
