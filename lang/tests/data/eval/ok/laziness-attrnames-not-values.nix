builtins.attrNames { a = throw "x"; b = throw "y"; }
