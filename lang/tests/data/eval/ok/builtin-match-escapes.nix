[ (builtins.match "a\\.b" "a.b") (builtins.match "a\\.b" "axb") (builtins.match "\\(x\\)" "(x)") ]
