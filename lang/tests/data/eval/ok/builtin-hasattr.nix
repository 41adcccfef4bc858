[ (builtins.hasAttr "a" { a = 1; }) (builtins.hasAttr "b" { a = 1; }) ]
