[ (builtins.match "[[.hyphen.]]" "-") (builtins.match "[[.space.]]" " ") (builtins.match "[[=a=]]" "a") (builtins.match "[[.one.]-3]+" "123") ]
