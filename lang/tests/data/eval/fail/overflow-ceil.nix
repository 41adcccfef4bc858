# expect: E025
builtins.ceil 1.0e19
