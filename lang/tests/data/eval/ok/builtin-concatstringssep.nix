builtins.concatStringsSep ", " [ "a" "b" "c" ]
