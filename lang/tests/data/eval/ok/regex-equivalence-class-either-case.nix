[ (builtins.match "[[=a=]]+" "aA") (builtins.match "[[=B=]]" "b") ]
