let x = { y = 3; }; in -x.y
