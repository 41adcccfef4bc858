[ (builtins.match "a{0,0}" "") (builtins.match "a{1,3}b" "aab") (builtins.match "(ab){2,}" "ababab") (builtins.match "a{50000}" "a") ]
