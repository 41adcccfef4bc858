# expect: E042
builtins.hashString "sha3" "x"
