builtins.seq { a = throw "inner"; } "ok"
