"hello world"
