[ (builtins.concatStringsSep "," [ ]) (builtins.concatStringsSep "" [ "a" "b" ]) ]
