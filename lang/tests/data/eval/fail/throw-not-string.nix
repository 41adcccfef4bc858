# expect: E039
throw 1
