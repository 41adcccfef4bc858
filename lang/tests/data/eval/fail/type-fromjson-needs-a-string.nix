# expect: E020
builtins.fromJSON { __toString = s: "1"; }
