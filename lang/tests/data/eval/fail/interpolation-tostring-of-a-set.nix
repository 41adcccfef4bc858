# expect: E039
"x${toString { a = 1; }}"
