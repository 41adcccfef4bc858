builtins.foldl' (acc: x: "(" + acc + x + ")") "" [ "a" "b" "c" ]
