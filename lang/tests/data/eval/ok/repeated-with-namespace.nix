let s = { x = { v = 1; }; }; in with s; [ x x ]
