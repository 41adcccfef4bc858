# expect: E001
