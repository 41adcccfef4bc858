# expect: E040
builtins.match "\\}" "}"
