builtins.split "x|xy|xyz" "axyzb"
