[ (builtins.match "(a|b)*c" "abac") (builtins.match "((a)|b)*" "ab") ]
