[ (builtins.match "b" "abc") (builtins.match "a.*" "abc") (builtins.match ".*b.*" "abc") ]
