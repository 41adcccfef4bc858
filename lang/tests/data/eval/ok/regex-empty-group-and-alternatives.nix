[ (builtins.match "()" "") (builtins.match "(a|)" "") (builtins.match "a||b" "b") (builtins.match "(|a)b" "ab") ]
