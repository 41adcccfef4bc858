builtins.match "((a)(b(c)))" "abc"
