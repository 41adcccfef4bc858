[ (builtins.match "[[:alpha:]]+[[:digit:]]*" "abc12") (builtins.match "[[:upper:]][[:lower:]]+" "Hello") (builtins.match "[^a-c]+" "xyz") ]
