rec { x = [ 1 2 ]; y = x; }
