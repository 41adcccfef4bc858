[ (builtins.match "a}" "a}") (builtins.match "]" "]") (builtins.match "a{2}{3}" "aaaaaa") (builtins.match "x{0}y" "y") ]
