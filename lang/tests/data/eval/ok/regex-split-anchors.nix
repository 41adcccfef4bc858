[ (builtins.split "^a" "aaa") (builtins.split "a$" "aaa") (builtins.split "$" "ab") (builtins.split "^" "ab") ]
