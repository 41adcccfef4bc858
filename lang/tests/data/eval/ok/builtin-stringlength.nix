[ (builtins.stringLength "") (builtins.stringLength "abc") (builtins.stringLength "héllo") ]
