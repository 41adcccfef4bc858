[ (builtins.substring 0 3 "hello") (builtins.substring 2 100 "hello") (builtins.substring 10 2 "hello") (builtins.substring 1 (-1) "hello") (builtins.substring 0 0 "x") ]
