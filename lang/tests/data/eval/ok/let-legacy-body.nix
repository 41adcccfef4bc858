let { x = 1; y = x + 1; body = y * 10; }
