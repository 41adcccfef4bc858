map builtins.fromJSON [ "1" "\"s\"" "true" "null" "-2.5" ]
