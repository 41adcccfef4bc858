with builtins; [ (length [ 1 2 ]) (head [ "h" ]) ]
