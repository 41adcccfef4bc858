# expect: E001
1 +
