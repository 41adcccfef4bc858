builtins.substring 0 2 "é!"
