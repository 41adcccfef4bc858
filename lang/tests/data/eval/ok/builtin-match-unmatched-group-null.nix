builtins.match "(a)|(b)" "b"
