{ requires = [ "a" ]; }
