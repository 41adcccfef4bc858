[ (builtins.match "a{2,3}" "aaa") (builtins.match "a{2}" "aaa") (builtins.match "(ab)+" "ababab") (builtins.match "a?b*" "") ]
