[ (builtins.match "." "é") (builtins.match ".." "é") (builtins.match "[[:alpha:]]" "é") ]
