[ (builtins.match "[!--]" ",") (builtins.match "[a-]+" "a-") (builtins.match "[-a]+" "-a") (builtins.match "[a-c-]+" "b-") (builtins.match "[]-a]" "^") ]
