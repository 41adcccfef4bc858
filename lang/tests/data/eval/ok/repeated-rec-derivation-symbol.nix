rec { y = [ 1 2 ]; x = y; }
