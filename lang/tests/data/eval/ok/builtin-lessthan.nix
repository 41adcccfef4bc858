[ (builtins.lessThan 1 2) (builtins.lessThan "b" "a") (builtins.lessThan 1.5 2) ]
