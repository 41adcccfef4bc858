builtins.replaceStrings [ "" ] [ "-" ] "abc"
