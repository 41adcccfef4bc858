builtins.match "a.b" "a\nb"
