builtins.toXML { "a<b" = "x<>&\"y"; n = "multi\nline\ttab"; }
