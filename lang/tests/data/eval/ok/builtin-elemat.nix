builtins.elemAt [ "a" "b" "c" ] 2
