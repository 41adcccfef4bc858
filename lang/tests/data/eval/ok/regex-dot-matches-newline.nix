[ (builtins.match "a.b" "a\nb") (builtins.match ".*" "line1\nline2") ]
