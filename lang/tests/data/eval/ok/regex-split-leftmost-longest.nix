builtins.split "a|ab" "xabx"
