builtins.replaceStrings [ "a" "b" ] [ "A" "B" ] "abcabc"
