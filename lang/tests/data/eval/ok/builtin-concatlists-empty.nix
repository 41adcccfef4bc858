builtins.concatLists [ ]
