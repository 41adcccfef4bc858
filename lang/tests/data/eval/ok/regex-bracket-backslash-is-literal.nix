[ (builtins.match "[\\]" "\\") (builtins.match "[a\\n]+" "an\\") ]
