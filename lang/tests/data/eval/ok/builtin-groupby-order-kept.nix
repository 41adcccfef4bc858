builtins.groupBy (s: builtins.substring 0 1 s) [ "banana" "apple" "blueberry" "avocado" "cherry" ]
