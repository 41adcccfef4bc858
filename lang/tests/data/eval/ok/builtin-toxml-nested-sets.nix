builtins.toXML { a = { b = { c = [ { d = 1; } ]; }; }; }
