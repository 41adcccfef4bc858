[ (builtins.match "a^b" "ab") (builtins.match "a$b" "ab") ]
