let s = { x = [ 1 2 ]; }; in with s; [ x x ]
