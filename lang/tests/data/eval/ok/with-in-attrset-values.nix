let lib = { f = x: x + 1; }; in with lib; { a = f 1; b = f 2; }
