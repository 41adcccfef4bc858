builtins.concatStringsSep "/" [ "a" { __toString = s: "b"; } ]
