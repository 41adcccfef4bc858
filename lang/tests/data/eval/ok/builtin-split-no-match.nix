builtins.split "q" "abc"
