# expect: E020
builtins.parseDrvName { __toString = s: "a-1"; }
