[ (builtins.match "a**" "aa") (builtins.match "a+?" "aa") (builtins.match "x*+" "xx") (builtins.match "(a|b)+?" "ab") (builtins.match "a{2,3}{2}" "aaaaa") ]
