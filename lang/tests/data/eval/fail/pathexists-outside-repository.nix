# expect: E034
builtins.pathExists /etc
