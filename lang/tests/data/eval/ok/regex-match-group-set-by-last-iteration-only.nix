[ (builtins.match "(a|b(c))*" "bca") (builtins.match "((a)|(b))*" "ab") (builtins.match "(a*)*" "b") (builtins.match "(a*)*" "") ]
