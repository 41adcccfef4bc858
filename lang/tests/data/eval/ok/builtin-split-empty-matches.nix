builtins.split "x*" "abc"
