# expect: E039
"1" + 1
