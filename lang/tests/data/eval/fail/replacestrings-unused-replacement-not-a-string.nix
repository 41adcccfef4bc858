# expect: E020
# Nix 2.8 checks every replacement is a string, even one never used
builtins.replaceStrings [ "a" "b" ] [ "A" 1 ] "a"
