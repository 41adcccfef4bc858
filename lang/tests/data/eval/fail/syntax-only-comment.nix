# expect: E001
# nothing but a comment
