[ (builtins.match "[]a]+" "a]a") (builtins.match "[a-]+" "-a-") (builtins.match "[.]" ".") ]
