builtins.sort (a: b: a < b) [ "pear" "apple" "Zebra" "banana" ]
