# expect: E037
builtins.concatStringsSep "," [ ./lib/x.txt ]
