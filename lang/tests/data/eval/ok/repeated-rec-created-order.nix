rec { w = [ 1 2 ]; u = w; }
