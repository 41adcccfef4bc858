# expect: E042
builtins.replaceStrings [ "a" ] [ ] "abc"
