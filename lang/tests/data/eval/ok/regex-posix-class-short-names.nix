[ (builtins.match "[[:d:]]+" "123") (builtins.match "[[:w:]]+" "a_1") (builtins.match "[[:s:]]" " ") ]
