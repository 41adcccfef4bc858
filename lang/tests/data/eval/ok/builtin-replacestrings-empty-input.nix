[ (builtins.replaceStrings [ "" ] [ "X" ] "") (builtins.replaceStrings [ ] [ ] "same") ]
