{ requires = [ "b" ]; }
