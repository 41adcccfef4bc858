builtins.split "(a|ab)(c|bcd)?(d*)" "xabcdx"
