let { a = 1; body = a + 1; }
