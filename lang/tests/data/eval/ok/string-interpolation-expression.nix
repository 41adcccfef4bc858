let xs = [ "a" "b" ]; in "first=${builtins.head xs} len=${toString (builtins.length xs)}"
