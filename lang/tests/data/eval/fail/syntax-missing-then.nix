# expect: E001
if true 1 else 2
