builtins.replaceStrings [ "a" ] [ "aa" ] "aaa"
