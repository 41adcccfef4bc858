builtins.toXML { a = 1 + 1; b = builtins.genList (x: x) 2; }
