builtins.replaceStrings [ "ab" "a" ] [ "X" "Y" ] "aab"
