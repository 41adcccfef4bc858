[ (builtins.match "(a|ab)(c|bcd)(d*)" "abcd") (builtins.match "(a*)(a+)" "aaa") (builtins.match "(a+)(a*)" "aaa") ]
